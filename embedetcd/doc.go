// Package embedetcd runs an etcd member inside the baton process and hands
// out an in-process client (v3client), which calls the server directly with
// no socket: about twice the throughput of a loopback gRPC client.
//
// Start returns a member that is ready to serve, or an error with
// everything it started already stopped:
//
//	cfg := embedetcd.NewConfig()
//	cfg.Dir = "baton-data"
//	m, err := embedetcd.Start(ctx, cfg)
//	if err != nil { ... }
//	defer m.Close()
//	cli := m.Client()
//
// The client URL serves etcd's gRPC API (and /version, /health, /metrics)
// with no CORS grant and, on loopback, only loopback Host names; its JSON
// gateway is off unless JSONGateway asks for it. An empty ClientURL serves
// no TCP client listener at all; ClientSocket then serves the API on
// SocketPath(Dir), in the data dir made 0700.
//
// etcd's own logs go to stderr at cfg.LogLevel ("warn" by default), less
// the error etcd logs on every clean shutdown.
package embedetcd
