package store

import (
	"fmt"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// stmtJournalInMemory is how much of a statement's journal SQLite keeps in
// memory before it moves it to a temporary file. Every multi-row INSERT
// into contacts opens one (its foreign key or a NOT NULL may abort it
// midway) and copies there each page it changes that was there before it:
// about one page a contact, the phone index's leaf. Past SQLite's default
// of 64 KiB (16 pages, a third of a 50-row statement) each copy was two
// pwrite calls, a sixth of the writer's CPU per contact
// (docs/benchmarks.md#the-writers-cpu-per-contact). 1 MiB holds such a
// statement's journal four times over; it is one block of that size,
// allocated once a statement needs it and given back when it ends, and a
// larger journal (a delete of millions of rows) still goes to a file.
const stmtJournalInMemory = 1 << 20

// SQLite takes the threshold only before its first connection opens, and
// then for every connection of the process: readers never write a journal.
func init() {
	tls := libc.NewTLS()
	defer tls.Close()
	va := libc.Xmalloc(tls, libc.Tsize_t(unsafe.Sizeof(uintptr(0))))
	defer libc.Xfree(tls, va)
	rc := sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_STMTJRNL_SPILL, libc.VaList(va, int32(stmtJournalInMemory)))
	if rc != sqlite3.SQLITE_OK {
		// Only an init that opened SQLite before this one gets here, on
		// every start: a programming error, not a condition to live with.
		panic(fmt.Sprintf("store: SQLite refused the statement journal's threshold (code %d): was a connection opened in an init?", rc))
	}
}
