// Package layout is how the store keeps a request body, for readers that
// compare many requests without rebuilding each (the prompt-cache
// analysis): a head, the leading system message, the messages of a chain
// shared by the requests that repeat them, and a tail (DESIGN §6). The
// store reads these (store.DB.RequestParts, ScanMessages); the types live
// apart from it so a reader needs no SQL to name them.
package layout

import (
	"cmp"
	"slices"
	"time"

	"github.com/inspect-dev/inspect/record"
)

// RequestParts is a stored request body as the store keeps it, for readers
// that compare many requests without rebuilding each (the cache analysis):
// the body is Head, then System, then the messages of the chain ending at
// Last (each a MessageLink), then Tail. Equal ids mean equal bytes, and a
// reader of a whole run gets the same slice for the same blob.
type RequestParts struct {
	Seq  int64 // the llm node's seq
	Head []byte
	// System is the leading system message (without a separator), nil
	// when the request has none or keeps it in the chain (SystemInChain).
	System []byte
	Tail   []byte
	// HeadID, SystemID and TailID name the blobs (SystemID 0: no System).
	HeadID, SystemID, TailID int64
	// SystemInChain is set on a request recorded before the system prompt
	// was stored apart: its chain's first message may be the system message.
	SystemInChain bool
	// Last is the MessageLink of the request's last message; 0: none.
	Last int64
	// Size is the body's length in bytes.
	Size int64
	// Started, Ended, Status, Model and Fidelity are the llm node's, as
	// its row holds them (the cache analysis sweeps the requests in time
	// order while the graph loads, and checks them against it after).
	Started, Ended time.Time
	Status         record.Status
	Model          string
	Fidelity       record.Fidelity
}

// MessageLink is one message of the store's message chain: the requests
// that repeat a history share its links, so a conversation's N requests
// are N pointers into one chain of its messages.
type MessageLink struct {
	ID   int64 // unique in the file
	Prev int64 // the link before it; 0: the first message of the chain
	// Data is the message's bytes as the body holds them, with the
	// separator (a comma and any space) before it; nil when they were
	// read without it (Size and Sep then say what they are).
	Data []byte
	// Size is the length of those bytes, also when Data was not read.
	Size int64
	// Sep is the separator's length when the bytes start with `,{` (1)
	// or `{` (0), as the messages of JSON bodies do; -1 for any other
	// start (read Data to know).
	Sep int
}

// Links are message links in id order, as a reader of a run's requests
// gets them.
type Links []MessageLink

// Index returns where link id is in ls: at its place when the ids run
// without gaps (one run's links, recorded together), else found by binary
// search.
func (ls Links) Index(id int64) (int, bool) {
	if len(ls) == 0 {
		return 0, false
	}
	if g := id - ls[0].ID; g >= 0 && g < int64(len(ls)) && ls[g].ID == id {
		return int(g), true
	}
	return slices.BinarySearchFunc(ls, id, func(l MessageLink, id int64) int { return cmp.Compare(l.ID, id) })
}
