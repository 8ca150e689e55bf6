/*
 * primes: a compute-bound checker. The artifact is two numbers, "N COUNT";
 * the checker counts the primes up to N by trial division and passes when
 * there are exactly COUNT of them. Built for wasm32-wasi with Debian's clang
 * (make fixtures) and natively for the benchmark that compares the two.
 */
#include <stdio.h>

static int is_prime(unsigned n) {
	if (n < 2) return 0;
	for (unsigned d = 2; d * d <= n; d++)
		if (n % d == 0) return 0;
	return 1;
}

int main(void) {
	unsigned n, want;
	if (scanf("%u %u", &n, &want) != 2) {
		fprintf(stderr, "artifact must be \"N COUNT\"\n");
		return 2;
	}
	unsigned got = 0;
	for (unsigned i = 0; i <= n; i++)
		got += is_prime(i);
	printf("primes up to %u: %u\n", n, got);
	if (got != want) {
		fprintf(stderr, "want %u primes, counted %u\n", want, got);
		return 1;
	}
	return 0;
}
