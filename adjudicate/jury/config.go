package jury

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Environment variables read by FromEnv.
const (
	EnvBaseURL = "ASSAY_JURY_BASE_URL" // the server's OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1
	EnvAPIKey  = "ASSAY_JURY_API_KEY"  // sent as a bearer token; empty sends none
	EnvModels  = "ASSAY_JURY_MODELS"   // comma separated; one juror per entry, repeats allowed
	EnvTimeout = "ASSAY_JURY_TIMEOUT"  // per call, retries included: a Go duration or whole seconds
)

// Defaults and bounds.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultBackoff          = 250 * time.Millisecond
	DefaultValueBytes       = 8 << 10  // the value at the criterion's path, shown to a juror
	DefaultDeliverableBytes = 32 << 10 // the whole deliverable, shown to a juror
	MaxJurors               = 32
	MaxRationaleBytes       = 512 // a juror's rationale as recorded
	MaxErrorBytes           = 256 // a juror's error as recorded
)

// Config configures a Panel.
type Config struct {
	// BaseURL is the OpenAI-compatible API's base URL, the part before
	// /chat/completions: https://api.openai.com/v1, http://127.0.0.1:8080/v1
	// (llama.cpp server), http://127.0.0.1:8000/v1 (vLLM),
	// http://127.0.0.1:11434/v1 (Ollama).
	BaseURL string
	// APIKey is sent as a bearer token; empty sends no Authorization.
	APIKey string
	// Models seats one juror per entry, in order; a model may repeat.
	Models []string
	// Timeout bounds each juror's call, retries included (DefaultTimeout
	// when zero).
	Timeout time.Duration
	// Backoff is the wait before the first retry of a 429 or 5xx answer,
	// doubled for each further retry (DefaultBackoff when zero).
	Backoff time.Duration
	// ValueBytes and DeliverableBytes bound what a juror is shown of the
	// value at the criterion's path and of the whole deliverable
	// (DefaultValueBytes and DefaultDeliverableBytes when zero).
	ValueBytes       int
	DeliverableBytes int
	// HTTPClient sends the requests (a new http.Client when nil).
	HTTPClient *http.Client
}

// FromEnv configures a Panel from the environment variables Env*, read
// through getenv (os.Getenv, or a stand-in that lays flags over it).
//
// # Errors
//
// (nil, nil) when neither ASSAY_JURY_BASE_URL nor ASSAY_JURY_MODELS is set:
// no jury is configured. An error when the configuration is incomplete or
// malformed.
func FromEnv(getenv func(string) string) (*Panel, error) {
	base := strings.TrimSpace(getenv(EnvBaseURL))
	models := strings.TrimSpace(getenv(EnvModels))
	if base == "" && models == "" {
		return nil, nil
	}
	cfg := Config{BaseURL: base, APIKey: strings.TrimSpace(getenv(EnvAPIKey))}
	var err error
	if cfg.Models, err = ParseModels(models); err != nil {
		return nil, fmt.Errorf("jury: %s: %w", EnvModels, err)
	}
	if t := strings.TrimSpace(getenv(EnvTimeout)); t != "" {
		if cfg.Timeout, err = ParseTimeout(t); err != nil {
			return nil, fmt.Errorf("jury: %s: %w", EnvTimeout, err)
		}
	}
	return New(cfg)
}

// ParseModels splits a comma-separated list of models, trimming spaces.
//
// # Errors
//
// When the list is empty, an entry is empty or there are more than
// MaxJurors.
func ParseModels(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no models")
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxJurors {
		return nil, fmt.Errorf("%d models, at most %d", len(parts), MaxJurors)
	}
	models := make([]string, len(parts))
	for i, p := range parts {
		if models[i] = strings.TrimSpace(p); models[i] == "" {
			return nil, fmt.Errorf("entry %d is empty", i+1)
		}
	}
	return models, nil
}

// ParseTimeout reads a timeout: a Go duration ("45s", "2m") or a whole
// number of seconds ("45").
//
// # Errors
//
// When s is neither, or is not positive.
func ParseTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		n, nerr := strconv.Atoi(s)
		if nerr != nil {
			return 0, fmt.Errorf("%q is not a duration (e.g. 30s)", s)
		}
		d = time.Duration(n) * time.Second
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q is not positive", s)
	}
	return d, nil
}

// validate checks cfg and fills in the defaults, returning the base URL's
// host.
func (cfg *Config) validate() (host string, err error) {
	if cfg.BaseURL == "" {
		return "", fmt.Errorf("jury: no base URL (set %s)", EnvBaseURL)
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("jury: base URL %q is not an http or https URL", cfg.BaseURL)
	}
	if len(cfg.Models) == 0 {
		return "", fmt.Errorf("jury: no models (set %s)", EnvModels)
	}
	if len(cfg.Models) > MaxJurors {
		return "", fmt.Errorf("jury: %d models, at most %d", len(cfg.Models), MaxJurors)
	}
	for i, m := range cfg.Models {
		if strings.TrimSpace(m) == "" {
			return "", fmt.Errorf("jury: model %d is empty", i+1)
		}
	}
	if cfg.Timeout < 0 || cfg.Backoff < 0 || cfg.ValueBytes < 0 || cfg.DeliverableBytes < 0 {
		return "", errors.New("jury: negative timeout, backoff or bound")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.ValueBytes == 0 {
		cfg.ValueBytes = DefaultValueBytes
	}
	if cfg.DeliverableBytes == 0 {
		cfg.DeliverableBytes = DefaultDeliverableBytes
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	return u.Host, nil
}
