//go:build wasip1

// Command gohello is a tiny Go wasip1 program for the meter tests: it reads
// stdin, prints a greeting and a checksum, and exits with status 3.
package main

import (
	"io"
	"os"
	"strconv"
)

func main() {
	in, _ := io.ReadAll(os.Stdin)
	sum := 0
	for i := 0; i < 100000; i++ {
		sum = (sum*31 + i) % 1000003
	}
	m := map[string]int{"pear": 4, "fig": 3, string(in): len(in)}
	os.Stdout.WriteString("hello " + string(in) + " " + strconv.Itoa(sum) + " " + strconv.Itoa(len(m)) + "\n")
	os.Exit(3)
}
