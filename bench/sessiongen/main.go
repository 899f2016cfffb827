// sessiongen writes session values shaped like a Sky.Live session for the load model
// (docs/performance.md): each value is one encoding/gob blob of a nested model (the
// session's identity, its live components with their assigns, and the rendered HTML each
// component last sent), sized near -size bytes and deterministic from -seed. With
// -incompressible the values are the same sizes of random bytes: the worst case for any
// compression on the way to disk.
//
// Output: -count values, each framed as a 4-byte big-endian length and the value's bytes,
// the format bench/loadgen's --value-file reads. Standard library only; not a test.
//
// Usage: go run ./bench/sessiongen -seed 1 -count 256 -size 37000 -out values.bin
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"time"
)

// Item is one row of a component's list (a todo, a message, a search hit).
type Item struct {
	ID       int64
	Title    string
	Body     string
	Done     bool
	Tags     []string
	Author   string
	Created  time.Time
	Votes    int32
	Children []int64
}

// Component is one live component: its assigns, its rows and the HTML it last rendered.
type Component struct {
	ID       string
	Module   string
	Assigns  map[string]string
	Counters map[string]int64
	Items    []Item
	Statics  []string // the template's fixed parts
	Rendered string   // the last full render of the component
}

// Flash is a message shown once.
type Flash struct {
	Kind    string
	Message string
}

// Session is what the runtime keeps per session key.
type Session struct {
	ID         string
	UserID     int64
	UserName   string
	Email      string
	Locale     string
	CSRFToken  string
	CreatedAt  time.Time
	LastSeen   time.Time
	Path       string
	Params     map[string]string
	Components []Component
	Flashes    []Flash
	Events     []string
	Version    uint64
}

var words = strings.Fields(`account action active add admin alert archive assign before
board button cancel card cart change channel checkout clear close comment confirm count
create customer dashboard data delete detail dialog done draft edit email empty event export
filter first form group header help hidden history home inbox invoice item label last layout
list load login logout menu message modal name new next note notice open order owner page
panel password payment pending plan price primary product profile project queue read recent
remove reply report reset review role save search section select send session settings share
show sign status step submit summary table task team theme ticket title today toggle total
update upload user value view warning week welcome window workspace year`)

var classes = []string{"btn btn-primary", "btn btn-secondary", "card", "card-body", "list-group-item",
	"row", "col-md-6", "text-muted", "badge bg-info", "form-control", "d-flex justify-content-between",
	"table table-striped", "nav-link active", "alert alert-warning", "input-group"}

type gen struct{ r *rand.Rand }

func (g gen) word() string { return words[g.r.Intn(len(words))] }

func (g gen) phrase(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = g.word()
	}
	return strings.Join(parts, " ")
}

func (g gen) token(n int) string {
	const hex = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = hex[g.r.Intn(16)]
	}
	return string(b)
}

func (g gen) item(id int64, base time.Time) Item {
	it := Item{ID: id, Title: g.phrase(2 + g.r.Intn(4)), Body: g.phrase(6 + g.r.Intn(20)),
		Done: g.r.Intn(3) == 0, Author: g.word() + "." + g.word(),
		Created: base.Add(-time.Duration(g.r.Intn(86400*30)) * time.Second),
		Votes:   int32(g.r.Intn(500))}
	for i := 0; i < g.r.Intn(4); i++ {
		it.Tags = append(it.Tags, g.word())
	}
	for i := 0; i < g.r.Intn(3); i++ {
		it.Children = append(it.Children, g.r.Int63n(1<<40))
	}
	return it
}

// render writes the component's HTML the way a server-rendered template would: the same
// markup per row, with each row's own text and attributes.
func (g gen) render(c *Component) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<div id="%s" class="%s" data-phx-component="%s">`, c.ID,
		classes[g.r.Intn(len(classes))], c.Module)
	fmt.Fprintf(&b, `<header class="card-header"><h2>%s</h2><span class="badge">%d</span></header><ul class="list-group">`,
		c.Assigns["title"], len(c.Items))
	for _, it := range c.Items {
		done := ""
		if it.Done {
			done = " checked"
		}
		fmt.Fprintf(&b, `<li class="%s" id="item-%d" phx-click="select" phx-value-id="%d">`+
			`<input type="checkbox" phx-click="toggle" phx-value-id="%d"%s>`+
			`<span class="title">%s</span><p class="text-muted small">%s</p>`+
			`<span class="author">%s</span><time datetime="%s">%s</time>`+
			`<button class="btn btn-sm btn-outline-danger" phx-click="delete" phx-value-id="%d">%s</button></li>`,
			classes[g.r.Intn(len(classes))], it.ID, it.ID, it.ID, done, it.Title, it.Body, it.Author,
			it.Created.Format(time.RFC3339), it.Created.Format("Jan 2 15:04"), it.ID, g.word())
	}
	b.WriteString(`</ul><footer class="card-footer"><form phx-submit="add"><input class="form-control" name="title"></form></footer></div>`)
	return b.String()
}

func (g gen) component(n int, base time.Time) Component {
	c := Component{ID: fmt.Sprintf("c%d-%s", n, g.token(6)), Module: "Live." + strings.Title(g.word()) + "Component",
		Assigns: map[string]string{}, Counters: map[string]int64{}}
	for i := 0; i < 6+g.r.Intn(8); i++ {
		c.Assigns[g.word()+"_"+g.word()] = g.phrase(1 + g.r.Intn(6))
	}
	c.Assigns["title"] = g.phrase(3)
	for i := 0; i < 3+g.r.Intn(5); i++ {
		c.Counters[g.word()] = g.r.Int63n(100000)
	}
	for i := 0; i < 4+g.r.Intn(10); i++ {
		c.Items = append(c.Items, g.item(g.r.Int63n(1<<31), base))
	}
	c.Statics = []string{`<div class="`, `" id="`, `">`, `</div>`, `<li>`, `</li>`}
	c.Rendered = g.render(&c)
	return c
}

// session builds one session whose gob encoding is near `size` bytes: components are added
// until the next one would pass the target, then the last list is trimmed to land close to it.
func (g gen) session(n int, size int) []byte {
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	s := Session{ID: g.token(32), UserID: g.r.Int63n(1 << 40), UserName: g.word() + " " + g.word(),
		Email: g.word() + "@" + g.word() + ".example", Locale: "en-GB", CSRFToken: g.token(44),
		CreatedAt: base, LastSeen: base.Add(time.Duration(g.r.Intn(3600)) * time.Second),
		Path: "/" + g.word() + "/" + g.word(), Params: map[string]string{"tab": g.word(), "page": fmt.Sprint(g.r.Intn(20))},
		Version: uint64(n)}
	for i := 0; i < 3; i++ {
		s.Flashes = append(s.Flashes, Flash{Kind: "info", Message: g.phrase(8)})
	}
	for i := 0; i < 20; i++ {
		s.Events = append(s.Events, "phx:"+g.word()+":"+g.token(8))
	}
	encode := func() []byte {
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(&s); err != nil {
			panic(err)
		}
		return buf.Bytes()
	}
	for len(encode()) < size {
		s.Components = append(s.Components, g.component(len(s.Components), base))
	}
	// Too large now: drop rows of the last component (re-rendering it) until it fits.
	last := &s.Components[len(s.Components)-1]
	for len(encode()) > size && len(last.Items) > 0 {
		last.Items = last.Items[:len(last.Items)-1]
		last.Rendered = g.render(last)
	}
	return encode()
}

func main() {
	seed := flag.Int64("seed", 1, "random seed: the same seed writes the same bytes")
	count := flag.Int("count", 256, "values to write")
	size := flag.Int("size", 37000, "target bytes per value")
	incompressible := flag.Bool("incompressible", false, "random bytes of the gob values' sizes")
	out := flag.String("out", "", "output file (framed values)")
	flag.Parse()
	if *out == "" || *count < 1 || *size < 64 {
		fmt.Fprintln(os.Stderr, "usage: sessiongen -out FILE [-seed 1] [-count 256] [-size 37000] [-incompressible]")
		os.Exit(2)
	}
	g := gen{rand.New(rand.NewSource(*seed))}
	var file bytes.Buffer
	total := 0
	for i := 0; i < *count; i++ {
		v := g.session(i, *size)
		if *incompressible {
			g.r.Read(v)
		}
		var head [4]byte
		binary.BigEndian.PutUint32(head[:], uint32(len(v)))
		file.Write(head[:])
		file.Write(v)
		total += len(v)
	}
	if err := os.WriteFile(*out, file.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "sessiongen:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "sessiongen: %d values, mean %d bytes, to %s\n", *count, total / *count, *out)
}
