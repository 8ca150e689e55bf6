package jury_test

import (
	"fmt"
	"os"

	"github.com/assayhq/assay/adjudicate/jury"
)

func ExampleFromEnv() {
	getenv := func(k string) string {
		return map[string]string{
			jury.EnvBaseURL: "http://127.0.0.1:8080/v1", // llama.cpp server
			jury.EnvModels:  "qwen2.5-7b-instruct,llama-3.1-8b-instruct,qwen2.5-7b-instruct",
			jury.EnvTimeout: "20s",
		}[k]
	}
	panel, err := jury.FromEnv(getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println(len(panel.Models()), "jurors at", panel.Host())

	none, err := jury.FromEnv(func(string) string { return "" })
	fmt.Println(none == nil, err)
	// Output:
	// 3 jurors at 127.0.0.1:8080
	// true <nil>
}
