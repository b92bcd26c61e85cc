package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/cluster"
	"github.com/hashicorp/raft"
)

type peer struct{ id, raftAddr, httpAddr string }

func parsePeers(s string) ([]peer, error) {
	var ps []peer
	for _, e := range strings.Split(s, ",") {
		f := strings.Split(e, "=")
		if len(f) != 3 || f[0] == "" || f[1] == "" || f[2] == "" {
			return nil, fmt.Errorf("peer %q: want id=raftAddr=httpAddr", e)
		}
		ps = append(ps, peer{f[0], f[1], f[2]})
	}
	return ps, nil
}

func main() {
	id := flag.String("id", "", "this node's ID (one of -peers)")
	dir := flag.String("dir", "", "data directory")
	peersFlag := flag.String("peers", "", "initial members: id=raftAddr=httpAddr,...")
	join := flag.Bool("join", false, "do not bootstrap: wait to be added with POST /join on the leader")
	flag.Parse()
	if err := run(*id, *dir, *peersFlag, *join); err != nil {
		fmt.Fprintln(os.Stderr, "bwkv-cluster:", err)
		os.Exit(1)
	}
}

func run(id, dir, peersFlag string, join bool) error {
	if id == "" || dir == "" || peersFlag == "" {
		return errors.New("-id, -dir and -peers are required")
	}
	peers, err := parsePeers(peersFlag)
	if err != nil {
		return err
	}
	var self *peer
	var servers []raft.Server
	for i, p := range peers {
		if p.id == id {
			self = &peers[i]
		}
		servers = append(servers, raft.Server{ID: raft.ServerID(p.id), Address: raft.ServerAddress(p.raftAddr)})
	}
	if self == nil {
		return fmt.Errorf("-id %s is not in -peers", id)
	}
	cfg := cluster.Config{ID: id, Dir: dir, BindAddr: self.raftAddr}
	if !join {
		cfg.Bootstrap = servers
	}
	node, err := cluster.Open(cfg)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: self.httpAddr, Handler: newHandler(node, peers), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("bwkv-cluster %s: raft %s, http %s", id, self.raftAddr, self.httpAddr)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		log.Printf("bwkv-cluster %s: %v, stopping", id, s)
	case err = <-errc:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	if cerr := node.Close(); err == nil || errors.Is(err, http.ErrServerClosed) {
		err = cerr
	}
	return err
}

type handler struct {
	node   *cluster.Node
	httpOf map[string]string // raft ID -> HTTP address
}

func newHandler(node *cluster.Node, peers []peer) http.Handler {
	h := &handler{node: node, httpOf: map[string]string{}}
	for _, p := range peers {
		h.httpOf[p.id] = p.httpAddr
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /kv/{key}", h.get)
	mux.HandleFunc("PUT /kv/{key}", h.put)
	mux.HandleFunc("DELETE /kv/{key}", h.del)
	mux.HandleFunc("POST /cas", h.cas)
	mux.HandleFunc("GET /status", h.status)
	mux.HandleFunc("POST /join", h.join)
	mux.HandleFunc("POST /remove", h.remove)
	mux.HandleFunc("POST /transfer", h.transfer)
	return mux
}

// reqTimeout bounds one request's wait for raft.
const reqTimeout = 5 * time.Second

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// fail maps an error to a status: a follower redirects to the leader, a
// failed condition is 409, a missing key 404, an unknown outcome 503 with
// "uncertain": true (the write may still apply).
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var nl *cluster.NotLeaderError
	switch {
	case errors.As(err, &nl):
		if addr, ok := h.httpOf[string(nl.LeaderID)]; ok {
			http.Redirect(w, r, "http://"+addr+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			return
		}
		reply(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error()})
	case errors.Is(err, cluster.ErrConditionFailed):
		reply(w, http.StatusConflict, map[string]any{"error": err.Error()})
	case errors.Is(err, bwkv.ErrNotFound):
		reply(w, http.StatusNotFound, map[string]any{"error": "not found"})
	case errors.Is(err, cluster.ErrBadBatch):
		reply(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
	default:
		reply(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error(), "uncertain": cluster.Uncertain(err)})
	}
}

func (h *handler) get(w http.ResponseWriter, r *http.Request) {
	key := []byte(r.PathValue("key"))
	var v []byte
	var ver uint64
	var err error
	if r.URL.Query().Get("stale") == "1" {
		v, ver, err = h.node.StaleGet(key)
	} else {
		ctx, cancel := context.WithTimeout(r.Context(), reqTimeout)
		defer cancel()
		v, ver, err = h.node.Get(ctx, key)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	reply(w, http.StatusOK, map[string]any{"key": string(key), "value": string(v), "version": ver})
}

func (h *handler) update(w http.ResponseWriter, r *http.Request, b *cluster.Batch) {
	ctx, cancel := context.WithTimeout(r.Context(), reqTimeout)
	defer cancel()
	idx, err := h.node.Update(ctx, b)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	reply(w, http.StatusOK, map[string]any{"index": idx})
}

func (h *handler) put(w http.ResponseWriter, r *http.Request) {
	v, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		reply(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	h.update(w, r, new(cluster.Batch).Put([]byte(r.PathValue("key")), v))
}

func (h *handler) del(w http.ResponseWriter, r *http.Request) {
	h.update(w, r, new(cluster.Batch).Delete([]byte(r.PathValue("key"))))
}

func (h *handler) cas(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Key     string  `json:"key"`
		Old     *string `json:"old"`
		Version *uint64 `json:"version"`
		New     string  `json:"new"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		reply(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	b := new(cluster.Batch)
	switch {
	case req.Version != nil:
		b.CheckVersion([]byte(req.Key), *req.Version)
	case req.Old != nil:
		b.CheckValue([]byte(req.Key), []byte(*req.Old))
	default:
		b.CheckValue([]byte(req.Key), nil)
	}
	h.update(w, r, b.Put([]byte(req.Key), []byte(req.New)))
}

func (h *handler) status(w http.ResponseWriter, r *http.Request) {
	lid, laddr := h.node.Leader()
	reply(w, http.StatusOK, map[string]any{
		"leader": lid, "leader_raft_addr": laddr, "leader_http_addr": h.httpOf[lid],
		"is_leader": h.node.IsLeader(), "applied": h.node.Applied(),
	})
}

func (h *handler) join(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID       string `json:"id"`
		RaftAddr string `json:"raft_addr"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil || req.ID == "" || req.RaftAddr == "" {
		reply(w, http.StatusBadRequest, map[string]any{"error": "want {\"id\", \"raft_addr\"}"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), reqTimeout)
	defer cancel()
	if err := h.node.AddVoter(ctx, req.ID, req.RaftAddr); err != nil {
		h.fail(w, r, err)
		return
	}
	reply(w, http.StatusOK, map[string]any{"added": req.ID})
}

func (h *handler) remove(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil || req.ID == "" {
		reply(w, http.StatusBadRequest, map[string]any{"error": "want {\"id\"}"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), reqTimeout)
	defer cancel()
	if err := h.node.RemoveServer(ctx, req.ID); err != nil {
		h.fail(w, r, err)
		return
	}
	reply(w, http.StatusOK, map[string]any{"removed": req.ID})
}

func (h *handler) transfer(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), reqTimeout)
	defer cancel()
	if err := h.node.TransferLeadership(ctx, "", ""); err != nil {
		h.fail(w, r, err)
		return
	}
	reply(w, http.StatusOK, map[string]any{"transferred": true})
}
