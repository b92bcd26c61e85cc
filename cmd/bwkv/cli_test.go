package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bwkv/bwkv"
)

// bin is the bwkv binary built once by TestMain: the tests run the real
// tool, as a user would.
var bin string

func TestMain(m *testing.M) {
	if os.Getenv("BWKV_CLI_CHILD") != "" {
		crashChild(os.Getenv("BWKV_CLI_CHILD"))
		return
	}
	dir, err := os.MkdirTemp("", "bwkv-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "bwkv")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

func runBin(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return r
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	r := runBin(t, args...)
	if r.code != 0 {
		t.Fatalf("bwkv %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// libraryDB writes a database with the library: checkpointed keys, keys
// only in the log, a deleted key and a binary key. It returns the dir and
// the expected contents.
func libraryDB(t *testing.T) (string, map[string]string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	db, err := bwkv.Open(dir, &bwkv.Options{PageSplitEntries: 8})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	put := func(k, v string) {
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	for i := 0; i < 40; i++ {
		put(fmt.Sprintf("user:%02d", i), fmt.Sprintf("name %d", i))
	}
	put("a", "first")
	put("zz", "last")
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	put("bin\x00\xff", "\x01\x02\xfe")
	put("user:05", "updated")
	if err := db.Delete([]byte("user:07")); err != nil {
		t.Fatal(err)
	}
	delete(want, "user:07")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, want
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func TestCLIGetPutDelScan(t *testing.T) {
	dir, want := libraryDB(t)
	if got := mustRun(t, "get", dir, "user:05"); got != "updated\n" {
		t.Fatalf("get: %q", got)
	}
	if got := mustRun(t, "get", dir, "--hex", hex.EncodeToString([]byte("bin\x00\xff")), "--format", "hex"); got != "0102fe\n" {
		t.Fatalf("get --hex --format hex: %q", got)
	}
	if got := mustRun(t, "get", dir, "a", "--format", "json"); got != `{"key":"a","value":"first"}`+"\n" {
		t.Fatalf("get --format json: %q", got)
	}
	r := runBin(t, "get", dir, "user:07")
	if r.code == 0 || !strings.Contains(r.stderr, "not found") || strings.Count(r.stderr, "bwkv:") != 1 || r.stdout != "" {
		t.Fatalf("get of a deleted key: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	// dump --format json: every key, in order, one object per line.
	out := mustRun(t, "dump", dir, "--format", "json")
	var got []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e struct{ Key, Value string }
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("dump json line %q: %v", sc.Text(), err)
		}
		if want[e.Key] != e.Value && !strings.HasPrefix(e.Key, "bin") {
			t.Fatalf("dump: %q=%q, want %q", e.Key, e.Value, want[e.Key])
		}
		got = append(got, e.Key)
	}
	if len(got) != len(want) {
		t.Fatalf("dump printed %d keys, want %d", len(got), len(want))
	}
	// dump --format hex is binary-safe: it decodes to the exact bytes.
	out = mustRun(t, "dump", dir, "--format", "hex")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	keys := sortedKeys(want)
	for i, l := range lines {
		k, v, _ := strings.Cut(l, "\t")
		kb, _ := hex.DecodeString(k)
		vb, _ := hex.DecodeString(v)
		if string(kb) != keys[i] || string(vb) != want[keys[i]] {
			t.Fatalf("dump hex line %d: %q", i, l)
		}
	}
	// scan: prefix, range, reverse, limit, keys-only, text.
	if out := mustRun(t, "scan", dir, "--prefix", "user:0", "--keys-only"); out != "user:00\nuser:01\nuser:02\nuser:03\nuser:04\nuser:05\nuser:06\nuser:08\nuser:09\n" {
		t.Fatalf("scan --prefix --keys-only: %q", out)
	}
	if out := mustRun(t, "scan", dir, "--start", "user:10", "--end", "user:13"); out != "user:10\tname 10\nuser:11\tname 11\nuser:12\tname 12\n" {
		t.Fatalf("scan --start --end: %q", out)
	}
	if out := mustRun(t, "scan", dir, "--reverse", "--limit", "2", "--format", "json"); out != `{"key":"zz","value":"last"}`+"\n"+`{"key":"user:39","value":"name 39"}`+"\n" {
		t.Fatalf("scan --reverse --limit: %q", out)
	}
	if out := mustRun(t, "scan", dir, "--prefix", "user:3", "--keys-only", "--format", "json", "--limit", "1"); out != `{"key":"user:30"}`+"\n" {
		t.Fatalf("scan json keys-only: %q", out)
	}
	// put and del write through the library's rules.
	mustRun(t, "put", dir, "new", "value")
	mustRun(t, "del", dir, "a")
	mustRun(t, "del", dir, "never-there")
	// With --format hex or json they print what they wrote, as scan would.
	if out := mustRun(t, "put", dir, "j", "v\"1", "--format", "json"); out != `{"key":"j","value":"v\"1"}`+"\n" {
		t.Fatalf("put --format json: %q", out)
	}
	if out := mustRun(t, "put", dir, "--hex", "00ff", "0a", "--format", "hex"); out != "00ff\t0a\n" {
		t.Fatalf("put --hex --format hex: %q", out)
	}
	if out := mustRun(t, "del", dir, "j", "--format", "json"); out != `{"key":"j"}`+"\n" {
		t.Fatalf("del --format json: %q", out)
	}
	if out := mustRun(t, "del", dir, "--hex", "00ff", "--format", "hex"); out != "00ff\n" {
		t.Fatalf("del --hex --format hex: %q", out)
	}
	if out := mustRun(t, "put", dir, "t", "text", "--format", "text"); out != "" {
		t.Fatalf("put --format text: %q, want nothing", out)
	}
	if out := mustRun(t, "get", dir, "new"); out != "value\n" {
		t.Fatalf("get after put: %q", out)
	}
	if r := runBin(t, "get", dir, "a"); r.code != 1 {
		t.Fatalf("get after del: exit %d", r.code)
	}
	db, err := bwkv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := db.Get([]byte("new")); err != nil || string(v) != "value" {
		t.Fatalf("library reads the CLI's put: %q %v", v, err)
	}
	db.Close()
}

func TestCLIHelpAndErrors(t *testing.T) {
	cmds := [][]string{{}, {"get"}, {"put"}, {"del"}, {"scan"}, {"dump"}, {"check"}, {"stats"},
		{"wal"}, {"wal", "dump"}, {"manifest"}, {"manifest", "dump"}, {"help"}, {"frames"}, {"backup"}, {"restore"}, {"compact"}, {"demo"}}
	for _, c := range cmds {
		r := runBin(t, append(c, "--help")...)
		if r.code != 0 || !strings.Contains(r.stdout, "Example") || !strings.Contains(r.stdout, "bwkv") {
			t.Fatalf("bwkv %v --help: exit %d, output %q", c, r.code, r.stdout)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"get", "/nonexistent/db", "k"}, 1},
		{[]string{"get", "onlydir"}, 2},
		{[]string{"scan", t.TempDir(), "--format", "yaml"}, 2},
		{[]string{"put", t.TempDir(), "k", "v", "--format", "yaml"}, 2},
		{[]string{"del", t.TempDir(), "k", "--format", "yaml"}, 2},
		{[]string{"nosuchcommand"}, 2},
		{[]string{"scan", "d", "--nosuchflag"}, 2},
	} {
		r := runBin(t, tc.args...)
		if r.code != tc.code || strings.Count(r.stderr, "bwkv:") != 1 || !strings.HasPrefix(r.stderr, "bwkv: ") {
			t.Fatalf("bwkv %v: exit %d (want %d), stderr %q (want one 'bwkv:' prefix)", tc.args, r.code, tc.code, r.stderr)
		}
	}
}

// fingerprint hashes every entry under dir (name, size, mode, mtime,
// contents).
func fingerprint(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		line := fmt.Sprintf("%s %d %v %d", rel, info.Size(), info.Mode(), info.ModTime().UnixNano())
		if !d.IsDir() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// crashChild writes commits and a loser (whose records a later commit's
// fsync made durable), says "ready" and waits to be killed.
func crashChild(dir string) {
	db, err := bwkv.Open(dir, &bwkv.Options{PageSplitEntries: 8})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for i := 0; i < 30; i++ {
		db.Put(fmt.Appendf(nil, "k%02d", i), []byte("v"))
	}
	db.Checkpoint()
	for i := 0; i < 30; i += 2 {
		db.Put(fmt.Appendf(nil, "k%02d", i), []byte("w"))
	}
	tx, _ := db.Begin()
	tx.Put([]byte("k01"), []byte("loser"))
	tx.Put([]byte("loser"), []byte("x"))
	db.Put([]byte("last"), []byte("after the loser"))
	fmt.Println("ready")
	select {}
}

// killedDB leaves a database that needs recovery, written by a child
// process killed with SIGKILL.
func killedDB(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "killed")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "BWKV_CLI_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Kill()
	cmd.Wait()
	if line != "ready\n" {
		t.Fatalf("crash child: %q", line)
	}
	return dir
}

// TestCLIReadOnlyCommandsWriteNothing runs every read-only command on a
// clean database and on one that needs recovery, and requires every
// file's bytes and mtime (and every directory's) to be unchanged.
func TestCLIReadOnlyCommandsWriteNothing(t *testing.T) {
	clean, _ := libraryDB(t)
	killed := killedDB(t)
	for _, dir := range []string{clean, killed} {
		before := fingerprint(t, dir)
		if !strings.Contains(mustRun(t, "stats", dir), "pending recovery") && dir == killed {
			t.Fatal("the killed child's directory needs no recovery: the test proves nothing")
		}
		if dir == killed {
			if out := mustRun(t, "get", dir, "k01"); out != "v\n" {
				t.Fatalf("the loser's write is visible: %q", out)
			}
		} else {
			mustRun(t, "get", dir, "a")
		}
		mustRun(t, "scan", dir, "--format", "json")
		mustRun(t, "dump", dir, "--format", "hex")
		if out := mustRun(t, "check", dir); out != "ok\n" {
			t.Fatalf("check: %q", out)
		}
		mustRun(t, "stats", dir, "--json")
		mustRun(t, "wal", "dump", dir)
		mustRun(t, "manifest", "dump", dir)
		mustRun(t, "frames", dir, "000001.data")
		mustRun(t, "backup", dir, filepath.Join(t.TempDir(), "b"))
		if after := fingerprint(t, dir); after != before {
			t.Fatalf("read-only commands changed %s:\nbefore\n%s\nafter\n%s", dir, before, after)
		}
	}
	// The killed child's commits are all there, its loser is not.
	out := mustRun(t, "dump", killed)
	if !strings.Contains(out, "last\tafter the loser\n") || strings.Contains(out, "loser\tx") || !strings.Contains(out, "k00\tw\n") {
		t.Fatalf("dump of the killed child's database: %q", out)
	}
}

func TestCLICheckDamaged(t *testing.T) {
	dir, _ := libraryDB(t)
	data := filepath.Join(dir, "000001.data")
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/3] ^= 0x40
	if err := os.WriteFile(data, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, "check", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "000001.data") {
		t.Fatalf("check of a damaged copy: exit %d, stderr %q (want exit 1 naming 000001.data)", r.code, r.stderr)
	}
	// A missing data file is named too.
	dir2, _ := libraryDB(t)
	os.Remove(filepath.Join(dir2, "000001.data"))
	r = runBin(t, "check", dir2)
	if r.code != 1 || !strings.Contains(r.stderr, "000001.data") {
		t.Fatalf("check with a missing data file: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestCLIBackupRestoreCompact(t *testing.T) {
	dir, want := libraryDB(t)
	file := filepath.Join(t.TempDir(), "db.bwkv")
	mustRun(t, "backup", dir, file)
	if r := runBin(t, "backup", dir, file); r.code != 1 {
		t.Fatalf("backup over an existing file: exit %d", r.code)
	}
	target := filepath.Join(t.TempDir(), "restored")
	mustRun(t, "restore", file, target)
	if r := runBin(t, "restore", file, target); r.code != 1 || !strings.Contains(r.stderr, "database") {
		t.Fatalf("restore over a database: exit %d, %q", r.code, r.stderr)
	}
	if a, b := mustRun(t, "dump", dir, "--format", "hex"), mustRun(t, "dump", target, "--format", "hex"); a != b {
		t.Fatalf("restored dump differs:\n%s\n%s", a, b)
	}
	// A damaged backup: exit 1 naming the chunk, no target left.
	b, _ := os.ReadFile(file)
	b[len(b)/2] ^= 1
	bad := filepath.Join(t.TempDir(), "bad.bwkv")
	os.WriteFile(bad, b, 0o644)
	target2 := filepath.Join(t.TempDir(), "r2")
	if r := runBin(t, "restore", bad, target2); r.code != 1 || !strings.Contains(r.stderr, "chunk") {
		t.Fatalf("restore of a damaged stream: exit %d, %q", r.code, r.stderr)
	}
	if _, err := os.Stat(target2); !os.IsNotExist(err) {
		t.Fatalf("a failed restore left %s", target2)
	}
	if out := mustRun(t, "compact", target); !strings.Contains(out, "reclaimed") {
		t.Fatalf("compact: %q", out)
	}
	if out := mustRun(t, "get", target, "user:05"); out != want["user:05"]+"\n" {
		t.Fatalf("get after compact: %q", out)
	}
}

func TestCLIDemo(t *testing.T) {
	out := mustRun(t, "demo", "--keys", "2000", "--secs", "0.2")
	if !strings.Contains(out, "structural check: ok") {
		t.Fatalf("demo: %q", out)
	}
}
