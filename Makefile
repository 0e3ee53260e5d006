# nvmeof: see README.md.  `make` builds; `make test` runs everything CI runs.
.PHONY: all testbed test test-target clean
all:

testbed:
	tests/testbed/setup

test-target: all testbed
	tests/testbed/run bash tests/target/run-all.sh

test: test-target

clean:
	rm -rf build/out build/san
