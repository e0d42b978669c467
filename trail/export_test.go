package trail

// StreamRegistrations counts the event streams registered with tr's hub
// (streamhub.go): what a stream holds while it lives.
func StreamRegistrations(tr *Trail) int {
	tr.streams.Lock()
	defer tr.streams.Unlock()
	return len(tr.streams.streams)
}

// StallEvents makes tr's events watch deaf: it drops every response from
// now on until the watch is opened again, as a wedged stream would. It
// returns how many times that watch has been opened so far.
func StallEvents(tr *Trail) (opened int) { return int(tr.streams.Feed.Deafen()) }

// EventsGeneration is how many times tr's events watch has been opened.
func EventsGeneration(tr *Trail) int { return int(tr.streams.Feed.Generation()) }
