package cli

import (
	"bytes"
	"crypto/sha256"
	"testing"
)

// TestTrailedHash_HashesAllButTheLast32BytesWhateverTheWrites: "save -"
// checks etcd's trailer however the stream is cut into writes, writes
// shorter than the trailer included.
func TestTrailedHash_HashesAllButTheLast32BytesWhateverTheWrites(t *testing.T) {
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	want := sha256.Sum256(data[:len(data)-sha256.Size])
	for _, chunk := range []int{1, 5, 31, 32, 33, 100, 1000} {
		th := &trailedHash{h: sha256.New()}
		for rest := data; len(rest) > 0; {
			n := min(chunk, len(rest))
			if w, err := th.Write(rest[:n]); w != n || err != nil {
				t.Fatalf("write of %d: %d, %v", n, w, err)
			}
			rest = rest[n:]
		}
		if !bytes.Equal(th.h.Sum(nil), want[:]) || !bytes.Equal(th.tail, data[len(data)-sha256.Size:]) {
			t.Errorf("writes of %d bytes: wrong hash or tail", chunk)
		}
	}
}
