package jury

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv(t *testing.T) {
	t.Run("OKNoJury", func(t *testing.T) {
		p, err := FromEnv(env(nil))
		if p != nil || err != nil {
			t.Errorf("%v %v, want nil nil", p, err)
		}
	})
	t.Run("OK", func(t *testing.T) {
		p, err := FromEnv(env(map[string]string{
			EnvBaseURL: "http://127.0.0.1:8080/v1", EnvModels: " qwen2.5-7b, llama3.1-8b ,qwen2.5-7b",
			EnvAPIKey: "k", EnvTimeout: "45",
		}))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(p.Models(), "|"); got != "qwen2.5-7b|llama3.1-8b|qwen2.5-7b" || p.Host() != "127.0.0.1:8080" || p.timeout != 45*time.Second {
			t.Errorf("models %s host %s timeout %s", got, p.Host(), p.timeout)
		}
	})
	t.Run("OKDefaultTimeout", func(t *testing.T) {
		p, err := FromEnv(env(map[string]string{EnvBaseURL: "https://api.openai.com/v1", EnvModels: "gpt-4o-mini"}))
		if err != nil || p.timeout != DefaultTimeout {
			t.Errorf("%v %v", p, err)
		}
	})
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"ErrNoModels", map[string]string{EnvBaseURL: "http://h/v1"}, EnvModels},
		{"ErrNoBaseURL", map[string]string{EnvModels: "m"}, EnvBaseURL},
		{"ErrEmptyModel", map[string]string{EnvBaseURL: "http://h/v1", EnvModels: "a,,b"}, "entry 2 is empty"},
		{"ErrBadURL", map[string]string{EnvBaseURL: "127.0.0.1:8080", EnvModels: "m"}, "not an http or https URL"},
		{"ErrBadTimeout", map[string]string{EnvBaseURL: "http://h/v1", EnvModels: "m", EnvTimeout: "soon"}, "not a duration"},
		{"ErrZeroTimeout", map[string]string{EnvBaseURL: "http://h/v1", EnvModels: "m", EnvTimeout: "0s"}, "not positive"},
		{"ErrTooManyJurors", map[string]string{EnvBaseURL: "http://h/v1", EnvModels: strings.Repeat("m,", MaxJurors) + "m"}, "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := FromEnv(env(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v %v, want an error with %q", p, err, tc.want)
			}
		})
	}
}
