/* Test targets' blocking read of exactly n bytes from a socket. */
#ifndef NVMEOF_TEST_SOCKRD_H
#define NVMEOF_TEST_SOCKRD_H
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

static inline int rd(int fd, void *b, size_t n)
{
	for (size_t got = 0; got < n;) {
		ssize_t r = recv(fd, (char *)b + got, n - got, 0);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}
#endif
