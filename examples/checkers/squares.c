/*
 * squares: a seller's checker that honours evidence. The artifact is a table
 * of lines "N SQUARE"; every line must be right. A challenger's evidence
 * (/in/evidence) is one number N the table claims to cover: the table must
 * hold a right line for it. Rebuild: make -C ../../.. fixtures-deps, then
 *   clang --target=wasm32-wasi --sysroot=../../../.cache/wasi-sysroot -O2 -s squares.c -o squares.wasm
 */
#include <stdio.h>

int main(void) {
	long long n, sq, want = -1;
	int found = 0, lines = 0;
	FILE *ev = fopen("/in/evidence", "r");
	if (ev) {
		if (fscanf(ev, "%lld", &want) != 1) {
			fprintf(stderr, "evidence must be one number\n");
			return 2;
		}
		fclose(ev);
	}
	while (scanf("%lld %lld", &n, &sq) == 2) {
		lines++;
		if (n * n != sq) {
			fprintf(stderr, "line %d: %lld squared is not %lld\n", lines, n, sq);
			return 1;
		}
		if (n == want) found = 1;
	}
	if (lines == 0) {
		fprintf(stderr, "empty table\n");
		return 1;
	}
	if (want >= 0 && !found) {
		fprintf(stderr, "the table has no line for %lld\n", want);
		return 1;
	}
	printf("ok: %d lines\n", lines);
	return 0;
}
