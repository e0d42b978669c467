// Package node runs one baton node: an embedded etcd member (or a client of
// an external etcd cluster), the lock engine over it, and the HTTP server.
// main hands off to it, and end-to-end tests start real nodes with it.
//
//	cfg := node.DefaultConfig()
//	cfg.DataDir = dir
//	n, err := node.Start(ctx, cfg)
//	if err != nil { ... }
//	defer n.Close()
//	fmt.Println("serving on", n.Addr())
//
// Config embeds the engine's lock.Config, and Config.AddFlags registers
// the flags of "baton serve" on a pflag.FlagSet, each bound to its field.
package node
