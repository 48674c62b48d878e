// A Go program under picos: goroutines on several threads, the Go
// scheduler's asynchronous preemption (SIGURG), timers, files. Go makes its
// system calls with its own wrappers, not libc's.
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

func main() {
	var wg sync.WaitGroup
	results := make([]string, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			h := sha256.New()
			for j := 0; j < 20000; j++ {
				fmt.Fprintf(h, "%d-%d", i, j)
			}
			results[i] = fmt.Sprintf("%x", h.Sum(nil))[:16]
		}(i)
	}
	wg.Wait()
	sort.Strings(results)
	fmt.Println(strings.Join(results[:4], " "))
	ch := make(chan int)
	go func() { time.Sleep(10 * time.Millisecond); ch <- os.Getppid() * 0 + 42 }()
	fmt.Println(<-ch)
	f, _ := os.CreateTemp("", "g")
	f.WriteString("hello go\n")
	f.Close()
	b, _ := os.ReadFile(f.Name())
	os.Remove(f.Name())
	fmt.Print(string(b))
	// a tight loop that the Go scheduler must preempt asynchronously (SIGURG)
	done := make(chan bool)
	go func() { x := 0; for { x++; if x < 0 { break } } }()
	go func() { time.Sleep(50 * time.Millisecond); done <- true }()
	<-done
	fmt.Println("preempted ok")
}
