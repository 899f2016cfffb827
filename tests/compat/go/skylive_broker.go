// The Sky.Live runtime's cross-instance broker, done as the runtime does it, on Debian's redigo
// (golang-github-gomodule-redigo-dev): each app instance keeps one dedicated pub/sub
// connection, SUBSCRIBEs on sky:live:topic:<t> when a topic gets its first local subscriber,
// delivers its own messages to its local subscribers itself, PUBLISHes a gob envelope
// (instance id, origin, payload) for the others, and drops its own echo by instance id.
//
// Run by tests/compat/compat_server.py (--pair): instance a on the first server, instance b on
// the second (SKYDB_COMPAT_SOCKET, SKYDB_COMPAT_SOCKET_B); against one server both use it.
// Each instance publishes 40 view patches of 37 KB to the same topic at once; every local
// subscriber of both instances must see both instances' patches, each instance's in order and
// intact, and each instance must have dropped exactly its own 40 echoes. Exit 0 and a PASS line,
// or exit 1 naming the failed step. Payloads are compared, never printed. Bounded: 90 s.
//
// Build: GOPATH=/usr/share/gocode GO111MODULE=off go build -o skylive_broker skylive_broker.go
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

const (
	topicPrefix  = "sky:live:topic:"
	patchBytes   = 37 * 1024
	perInstance  = 40
	overallLimit = 90 * time.Second
)

// Envelope is what an instance publishes.
type Envelope struct {
	Instance string
	Origin   string
	Payload  []byte
}

// Message is what a local subscriber receives.
type Message struct {
	Topic   string
	Origin  string
	Payload []byte
}

// Broker is one app instance's side of the cross-instance broker.
type Broker struct {
	id   string
	pool *redis.Pool
	psc  redis.PubSubConn // the dedicated pub/sub connection

	mu         sync.Mutex
	local      map[string][]chan Message
	echoes     int
	subscribed chan string
	failed     chan error
}

func dialer(socket string) func() (redis.Conn, error) {
	return func() (redis.Conn, error) {
		return redis.Dial("unix", socket, redis.DialConnectTimeout(10*time.Second),
			redis.DialWriteTimeout(30*time.Second))
	}
}

func NewBroker(id, socket string) (*Broker, error) {
	conn, err := dialer(socket)()
	if err != nil {
		return nil, err
	}
	b := &Broker{
		id:         id,
		pool:       &redis.Pool{Dial: dialer(socket), MaxIdle: 4},
		psc:        redis.PubSubConn{Conn: conn},
		local:      map[string][]chan Message{},
		subscribed: make(chan string, 16),
		failed:     make(chan error, 1),
	}
	go b.receive()
	return b, nil
}

// Subscribe adds a local subscriber; a topic's first one SUBSCRIBEs on the pub/sub connection.
func (b *Broker) Subscribe(topic string) (<-chan Message, error) {
	ch := make(chan Message, 4*perInstance)
	b.mu.Lock()
	defer b.mu.Unlock()
	first := len(b.local[topic]) == 0
	b.local[topic] = append(b.local[topic], ch)
	if first {
		if err := b.psc.Subscribe(topicPrefix + topic); err != nil {
			return nil, err
		}
	}
	return ch, nil
}

// Publish delivers to this instance's subscribers and PUBLISHes for the other instances; the
// receivers PUBLISH counted (one pub/sub connection per subscribed instance).
func (b *Broker) Publish(topic, origin string, payload []byte) (int, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(Envelope{b.id, origin, payload}); err != nil {
		return 0, err
	}
	b.deliver(Message{topic, origin, payload})
	conn := b.pool.Get()
	defer conn.Close()
	return redis.Int(conn.Do("PUBLISH", topicPrefix+topic, buf.Bytes()))
}

func (b *Broker) deliver(m Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ch := range b.local[m.Topic] {
		ch <- m
	}
}

func (b *Broker) receive() {
	for {
		switch v := b.psc.Receive().(type) {
		case redis.Message:
			var env Envelope
			if err := gob.NewDecoder(bytes.NewReader(v.Data)).Decode(&env); err != nil {
				b.failed <- fmt.Errorf("undecodable envelope on %s: %v", v.Channel, err)
				return
			}
			if env.Instance == b.id { // our own echo: delivered locally already
				b.mu.Lock()
				b.echoes++
				b.mu.Unlock()
				continue
			}
			b.deliver(Message{strings.TrimPrefix(v.Channel, topicPrefix), env.Origin, env.Payload})
		case redis.Subscription:
			if v.Kind == "subscribe" {
				b.subscribed <- v.Channel
			}
		case error:
			b.failed <- v
			return
		}
	}
}

func (b *Broker) Echoes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.echoes
}

// patch is view patch i of instance `who`: deterministic, different for every (who, i).
func patch(who string, i int) []byte {
	out := make([]byte, 0, patchBytes+32)
	for block := 0; len(out) < patchBytes; block++ {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d/%d", who, i, block)))
		out = append(out, sum[:]...)
	}
	return out[:patchBytes]
}

func fail(step string, format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "FAIL [skylive_broker] %s: %s\n", step, fmt.Sprintf(format, args...))
	os.Exit(1)
}

// check reads one subscriber's 2*perInstance messages: each instance's in order, intact.
func check(name string, ch <-chan Message, failed <-chan error) {
	next := map[string]int{"a": 0, "b": 0}
	deadline := time.After(60 * time.Second)
	for n := 0; n < 2*perInstance; n++ {
		select {
		case m := <-ch:
			var who string
			var i int
			if _, err := fmt.Sscanf(m.Origin, "%1s-%d", &who, &i); err != nil {
				fail(name, "origin %q is not one of ours", m.Origin)
			}
			if i != next[who] {
				fail(name, "from instance %s: patch %d arrived where %d was due", who, i, next[who])
			}
			if m.Topic != "room" || !bytes.Equal(m.Payload, patch(who, i)) {
				fail(name, "patch %d from %s arrived changed (%d bytes)", i, who, len(m.Payload))
			}
			next[who]++
		case err := <-failed:
			fail(name, "pub/sub connection: %v", err)
		case <-deadline:
			fail(name, "got a:%d b:%d of %d patches each within 60 s", next["a"], next["b"], perInstance)
		}
	}
}

func main() {
	time.AfterFunc(overallLimit, func() { fail("the whole run", "not done within %v", overallLimit) })
	sockA := os.Getenv("SKYDB_COMPAT_SOCKET")
	sockB := os.Getenv("SKYDB_COMPAT_SOCKET_B")
	if sockB == "" {
		sockB = sockA
	}
	a, err := NewBroker("instance-a", sockA)
	if err != nil {
		fail("connect a", "%v", err)
	}
	b, err := NewBroker("instance-b", sockB)
	if err != nil {
		fail("connect b", "%v", err)
	}
	a1, err1 := a.Subscribe("room")
	a2, err2 := a.Subscribe("room") // second local subscriber: no second SUBSCRIBE
	b1, err3 := b.Subscribe("room")
	if err1 != nil || err2 != nil || err3 != nil {
		fail("subscribe", "%v %v %v", err1, err2, err3)
	}
	for _, br := range []*Broker{a, b} {
		select {
		case <-br.subscribed:
		case err := <-br.failed:
			fail("subscribe", "%v", err)
		case <-time.After(30 * time.Second):
			fail("subscribe", "no confirmation within 30 s")
		}
	}
	conn := a.pool.Get()
	numsub, err := redis.Values(conn.Do("PUBSUB", "NUMSUB", topicPrefix+"room"))
	conn.Close()
	if err != nil || len(numsub) != 2 {
		fail("PUBSUB NUMSUB", "%v %v", numsub, err)
	}
	if n, _ := redis.Int(numsub[1], nil); n != 2 {
		fail("PUBSUB NUMSUB", "%d pub/sub connections on the topic, expected one per instance (2)", n)
	}

	var wg sync.WaitGroup
	for _, pair := range []struct {
		who string
		br  *Broker
	}{{"a", a}, {"b", b}} {
		wg.Add(1)
		go func(who string, br *Broker) {
			defer wg.Done()
			for i := 0; i < perInstance; i++ {
				n, err := br.Publish("room", fmt.Sprintf("%s-%d", who, i), patch(who, i))
				if err != nil || n != 2 {
					fail("PUBLISH from "+who, "patch %d: %d receivers, %v (expected 2)", i, n, err)
				}
			}
		}(pair.who, pair.br)
	}
	check("a's first subscriber", a1, a.failed)
	check("a's second subscriber", a2, a.failed)
	check("b's subscriber", b1, b.failed)
	wg.Wait()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if a.Echoes() == perInstance && b.Echoes() == perInstance {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if a.Echoes() != perInstance || b.Echoes() != perInstance {
		fail("own echoes", "a dropped %d, b dropped %d, expected %d each", a.Echoes(), b.Echoes(), perInstance)
	}
	fmt.Printf("PASS [skylive_broker] against %s\n", os.Getenv("SKYDB_COMPAT_SERVER"))
}
