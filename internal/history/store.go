package history

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/storage"
	sbenchfmt "golang.org/x/perf/storage/benchfmt"
	"golang.org/x/perf/storage/db"
)

// Store is where results are kept: Local or Remote.
type Store interface {
	// Upload stores one result file's content under name (its base
	// name becomes the upload-file label) and returns the upload's ID.
	Upload(ctx context.Context, name string, content []byte) (string, error)
	// Query returns the stored results that match q, in perfdata's
	// query language ("key:value" words; "" is every result).
	Query(ctx context.Context, q string) Results
	// Close releases the store.
	Close() error
}

// Results iterates a query's results, like x/perf's storage.Query.
type Results interface {
	Next() bool
	Result() *sbenchfmt.Result
	Err() error
	Close() error
}

// Local is the embedded store: an SQLite database in perfdata's schema.
type Local struct{ db *db.DB }

// OpenLocal opens (creating it and its tables when missing) the SQLite
// store at path.
func OpenLocal(path string) (*Local, error) {
	if !haveSQLite {
		return nil, fmt.Errorf("history: open %s: %w", path, ErrNoSQLite)
	}
	d, err := db.OpenSQL("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		return nil, fmt.Errorf("history: open %s: %w", path, err)
	}
	return &Local{db: d}, nil
}

// Upload indexes content as perfdata's upload handler does (x/perf
// storage/app: one upload, its labels, every result line a record).
func (l *Local) Upload(ctx context.Context, name string, content []byte) (string, error) {
	u, err := l.db.NewUpload(ctx)
	if err != nil {
		return "", fmt.Errorf("history: new upload: %w", err)
	}
	meta := sbenchfmt.Labels{
		"upload":      u.ID,
		"upload-part": u.ID + "/0",
		"upload-time": time.Now().UTC().Format(time.RFC3339),
	}
	if name != "" {
		meta["upload-file"] = filepath.Base(name)
	}
	br := sbenchfmt.NewReader(bytes.NewReader(content))
	br.AddLabels(meta)
	n := 0
	for br.Next() {
		n++
		if err := u.InsertRecord(br.Result()); err != nil {
			u.Abort()
			return "", fmt.Errorf("history: store %s: %w", name, err)
		}
	}
	if err := br.Err(); err != nil {
		u.Abort()
		return "", fmt.Errorf("history: read %s: %w", name, err)
	}
	if n == 0 {
		u.Abort()
		return "", fmt.Errorf("history: %s: %w", name, ErrNoResults)
	}
	if err := u.Commit(); err != nil {
		return "", fmt.Errorf("history: store %s: %w", name, err)
	}
	return u.ID, nil
}

// Query runs q on the database.
func (l *Local) Query(_ context.Context, q string) Results { return l.db.Query(q) }

// Close closes the database.
func (l *Local) Close() error { return l.db.Close() }

// Remote is a perfdata server.
type Remote struct{ c *storage.Client }

// NewRemote returns the perfdata server at url; every request it makes
// ends within timeout.
func NewRemote(url string, timeout time.Duration) *Remote {
	return &Remote{c: &storage.Client{BaseURL: strings.TrimSuffix(url, "/"), HTTPClient: &http.Client{Timeout: timeout}}}
}

// Upload sends content to the server's /upload.
func (r *Remote) Upload(ctx context.Context, name string, content []byte) (string, error) {
	u := r.c.NewUpload(ctx)
	w, err := u.CreateFile(filepath.Base(name))
	if err == nil {
		_, err = w.Write(content)
	}
	if err != nil {
		u.Abort()
		return "", fmt.Errorf("history: upload %s to %s: %w", name, r.c.BaseURL, err)
	}
	st, err := u.Commit()
	if err != nil {
		return "", fmt.Errorf("history: upload %s to %s: %w", name, r.c.BaseURL, err)
	}
	return st.UploadID, nil
}

// Query asks the server's /search. A perfdata server refuses an empty
// query: "" asks for every upload ("upload>0").
func (r *Remote) Query(ctx context.Context, q string) Results {
	if strings.TrimSpace(q) == "" {
		q = "upload>0"
	}
	return remoteResults{r.c.Query(ctx, q), r.c.BaseURL}
}

// remoteResults names the server in its error.
type remoteResults struct {
	*storage.Query
	url string
}

func (q remoteResults) Err() error {
	if err := q.Query.Err(); err != nil {
		return fmt.Errorf("%s: %w", q.url, err)
	}
	return nil
}

// Close does nothing: the server stays.
func (r *Remote) Close() error { return nil }

// ErrNoSQLite: this build has no SQLite (it needs cgo), so no local store.
var ErrNoSQLite = errors.New("built without cgo: the local store's SQLite driver needs cgo")

// ErrNoResults: the file has no result line, nothing to store.
var ErrNoResults = errors.New("no benchmark result lines")

// ErrStored: the file is stored already (its rdmabench-sha256).
var ErrStored = errors.New("already stored")

// Labels are the labels Put adds to a file: see the package doc.
type Labels struct {
	Commit  string
	Host    string
	Version string
	RunTime time.Time
	// Extra are more labels, key → value (keys as configuration keys:
	// a lower-case letter first, no space, no upper case).
	Extra map[string]string
}

// Put stores the result file content (named name) in s with labels,
// unless s has it already (ErrStored). It returns the upload's ID.
func Put(ctx context.Context, s Store, name string, content []byte, l Labels) (string, error) {
	sum := sha256.Sum256(content)
	hash := hex.EncodeToString(sum[:])
	q := s.Query(ctx, "rdmabench-sha256:"+hash)
	found := q.Next()
	err := q.Err()
	q.Close()
	if err != nil {
		return "", fmt.Errorf("history: look up %s: %w", name, err)
	}
	if found {
		return "", fmt.Errorf("history: %s (sha256 %.12s): %w", name, hash, ErrStored)
	}
	head, err := header(content, hash, l)
	if err != nil {
		return "", fmt.Errorf("history: %s: %w", name, err)
	}
	return s.Upload(ctx, name, append(head, content...))
}

// header renders the labels as configuration lines, then the blank line
// that makes them the file's header: perfdata lets no later line
// replace them.
func header(content []byte, hash string, l Labels) ([]byte, error) {
	labels := map[string]string{
		"rdmabench-sha256":  hash,
		"commit":            l.Commit,
		"host":              l.Host,
		"rdmabench-version": l.Version,
	}
	if !l.RunTime.IsZero() {
		labels["run-time"] = l.RunTime.UTC().Format(time.RFC3339)
	}
	if u := unitLines(content); u != "" {
		labels["rdmabench-units"] = u
	}
	for k, v := range l.Extra {
		if err := checkKey(k); err != nil {
			return nil, err
		}
		if strings.ContainsAny(v, "\r\n") {
			return nil, fmt.Errorf("label %s: value %q has a line break", k, v)
		}
		labels[k] = v
	}
	var b bytes.Buffer
	keys := make([]string, 0, len(labels))
	for k, v := range labels {
		if v != "" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, labels[k])
	}
	b.WriteString("\n")
	return b.Bytes(), nil
}

// checkKey refuses a label key that would not read back as one.
func checkKey(k string) error {
	if k == "" || k[0] < 'a' || k[0] > 'z' || strings.ContainsAny(k, " \t:\r\n") || strings.ToLower(k) != k {
		return fmt.Errorf("label key %q: want a configuration key (a lower-case letter first, no space, colon or upper case)", k)
	}
	return nil
}

// unitLines gives the file's Unit lines' directions as
// "unit=higher unit=lower ...", in file order.
func unitLines(content []byte) string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(content))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || f[0] != "Unit" {
			continue
		}
		for _, kv := range f[2:] {
			if b, ok := strings.CutPrefix(kv, "better="); ok && (b == "higher" || b == "lower") {
				if e := f[1] + "=" + b; !slices.Contains(out, e) {
					out = append(out, e)
				}
			}
		}
	}
	return strings.Join(out, " ")
}
