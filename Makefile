# Assay's make targets. `make help` lists them.

GO          ?= go
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.version=$(VERSION)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
DATA        ?= ./data
ADDR        ?= :8080

# Fixtures are built from their sources with wabt, Debian's clang for
# wasm32-wasi, and Go's wasip1 port. A private sysroot holds only links to
# Debian's wasm32-wasi headers and libraries, so that clang never sees the
# host's headers.
SYSROOT     := $(CURDIR)/.cache/wasi-sysroot
WASI_CFLAGS := --target=wasm32-wasi --sysroot=$(SYSROOT) -O2 -s

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build bin/assay
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/assay ./cmd/assay

.PHONY: run
run: build ## start the server on its embedded badger store in ./data
	./bin/assay serve --addr $(ADDR) --data $(DATA)

.PHONY: test
test: ## run every test (needs only Go; the .wasm fixtures are committed)
	$(GO) test ./...

.PHONY: race
race: ## run every test under the race detector
	$(GO) test -race -short ./...

.PHONY: bench
bench: ## run the benchmarks (compare runs with benchstat)
	$(GO) test -run '^$$' -bench . -benchmem ./...

.PHONY: check
check: ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go') 2>&1); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

.PHONY: fixtures-deps
fixtures-deps: ## install what make fixtures needs (Debian: wabt, clang, lld, wasi-libc)
	apt-get install -y wabt clang lld wasi-libc libclang-rt-14-dev-wasm32

.PHONY: fixtures
fixtures: ## rebuild every .wasm fixture from its source
	@# Every X.wat builds to X.wasm beside it.
	@for f in $$(find . -name '*.wat' -not -path './.git/*' -not -path './.cache/*'); do \
		echo "wat2wasm $$f"; wat2wasm "$$f" -o "$${f%.wat}.wasm" || exit 1; \
	done
	@# Every C checker in fixtures/checkers/c builds to fixtures/checkers/NAME.wasm.
	@mkdir -p $(SYSROOT)/lib $(SYSROOT)/include
	@ln -sfn /usr/lib/wasm32-wasi $(SYSROOT)/lib/wasm32-wasi
	@ln -sfn /usr/include/wasm32-wasi $(SYSROOT)/include/wasm32-wasi
	@for f in fixtures/checkers/c/*.c; do \
		out=fixtures/checkers/$$(basename "$${f%.c}").wasm; \
		echo "clang $$f -> $$out"; clang $(WASI_CFLAGS) "$$f" -o "$$out" || exit 1; \
	done
	@# Every Go guest (a main.go tagged wasip1) in folder D builds to D.wasm:
	@# a command (checker ABI v1, _start), or a reactor when its main.go has
	@# a line `//assay:reactor` (-buildmode=c-shared: _initialize and
	@# assay_check, see checkers/guest).
	@for f in $$(grep -rl --include=main.go '^//go:build wasip1' . | grep -v '^./.git/'); do \
		d=$$(dirname "$$f"); form=command; mode=; \
		if grep -q '^//assay:reactor$$' "$$f"; then form=reactor; mode=-buildmode=c-shared; fi; \
		echo "go build $$d -> $$d.wasm ($$form)"; \
		(cd "$$d" && GOOS=wasip1 GOARCH=wasm $(GO) build $$mode -trimpath -ldflags="-s -w" -o "$$(basename $$d).wasm" . && mv "$$(basename $$d).wasm" ..) || exit 1; \
	done

.PHONY: python-wasm
python-wasm: ## rebuild checkers/python/runtime (CPython 3.11.2 for WASI) from Debian's sources
	checkers/python/build.sh

.PHONY: clean
clean: ## remove build outputs (not the committed fixtures)
	rm -rf bin .cache
