# Thin wrappers around dev.sh, which does the real work (and needs no make).
.PHONY: tour test bench setup
tour: ; bash dev.sh tour
test: ; bash dev.sh test
bench: ; bash dev.sh bench
setup: ; bash dev.sh setup
