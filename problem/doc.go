// Package problem is baton's one vocabulary of problem codes: the stable
// "code" member of every error answer (RFC 9457 problem+json), with the
// HTTP status it answers, its title, whether and how a caller may retry,
// and the exit status the baton CLI gives it.
//
// The server (package api) takes code, status and title from here; the Go
// client (package client) builds one sentinel error per code from here;
// the CLI (cli) takes its exit codes from here. A code added to
// the table is known to all three at once. It imports only the standard
// library, so that package client stays free of the server's code.
//
//	info, ok := problem.Lookup("lock_held")
//	if ok && info.Retry == problem.Later {
//		// wait Retry-After, then send the same request again
//	}
//	fmt.Println(info.Status, info.Title, info.Exit) // 409 Lock held 3
package problem
