/*
 * kTLS without the kernel's tls module (core/tls_ktls.c): what a record
 * that is not data means (tls_ktls_classify, from its type and plaintext:
 * TLS 1.3 packs several handshake messages in one record and splits one
 * across records, RFC 8446 5.1), and the keys the kernel is handed.
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "tls.h"

static int classify(unsigned char type, const uint8_t *b, size_t n, char *why)
{
	why[0] = 0;
	return tls_ktls_classify(type, b, n, why, 200);
}

/* A NewSessionTicket alone, or two in one record: dropped (no tickets are used) */
TEST(session_tickets_are_dropped)
{
	char why[200];
	static const uint8_t one[] = {4, 0, 0, 1, 0}, two[] = {4, 0, 0, 2, 7, 7, 4, 0, 0, 0};
	CHECK_EQ(classify(22, one, sizeof(one), why), TLS_CTRL_DROP);
	CHECK_EQ(classify(22, two, sizeof(two), why), TLS_CTRL_DROP);
}

/* A KeyUpdate after a ticket in the same record is named, not dropped with it */
TEST(a_key_update_is_named_even_behind_a_ticket)
{
	char why[200];
	static const uint8_t ku[] = {24, 0, 0, 1, 0}, nst_ku[] = {4, 0, 0, 1, 0, 24, 0, 0, 1, 0};
	CHECK_EQ(classify(22, ku, sizeof(ku), why), TLS_CTRL_FAIL);
	CHECK(strstr(why, "KeyUpdate") && strstr(why, "NVMEOF_KTLS=0"));
	CHECK_EQ(classify(22, nst_ku, sizeof(nst_ku), why), TLS_CTRL_FAIL);
	CHECK(strstr(why, "KeyUpdate") && strstr(why, "NVMEOF_KTLS=0"));
}

/* A message split across records: its first part (a ticket's header with a
 * longer body) and a continuation (whose first byte is arbitrary, here 4)
 * are refused as fragments, not dropped as tickets */
TEST(a_handshake_message_split_across_records_is_refused)
{
	char why[200];
	static const uint8_t head[] = {4, 0, 0, 9, 1, 2}, cont[] = {4, 5, 6, 7, 8};
	static const uint8_t short_hdr[] = {4, 0, 0, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 4, 0};
	CHECK_EQ(classify(22, head, sizeof(head), why), TLS_CTRL_FAIL);
	CHECK(strstr(why, "split across records"));
	CHECK_EQ(classify(22, cont, sizeof(cont), why), TLS_CTRL_FAIL);
	CHECK(strstr(why, "split across records"));
	CHECK_EQ(classify(22, short_hdr, sizeof(short_hdr), why), TLS_CTRL_FAIL);
	CHECK_EQ(classify(22, short_hdr, 0, why), TLS_CTRL_FAIL);
}

/* Other handshake messages and record types end the connection, named */
TEST(other_records_are_named)
{
	char why[200];
	static const uint8_t cr[] = {13, 0, 0, 0}, ccs[] = {1};
	CHECK_EQ(classify(22, cr, sizeof(cr), why), TLS_CTRL_FAIL);
	CHECK(strstr(why, "type 13"));
	CHECK_EQ(classify(20, ccs, sizeof(ccs), why), TLS_CTRL_FAIL);
	CHECK(strstr(why, "type 20"));
}

/* A close_notify is the controller closing the connection (as OpenSSL's
 * records read it); other alerts are named by their description */
TEST(close_notify_closes_and_other_alerts_are_named)
{
	char why[200];
	static const uint8_t close_notify[] = {1, 0}, bad_mac[] = {2, 20}, odd[] = {2};
	CHECK_EQ(classify(21, close_notify, sizeof(close_notify), why), TLS_CTRL_CLOSE);
	CHECK_EQ(classify(21, bad_mac, sizeof(bad_mac), why), TLS_CTRL_FAIL);
	CHECK(strstr(why, "bad record mac") && strstr(why, "fatal"));
	CHECK_EQ(classify(21, odd, sizeof(odd), why), TLS_CTRL_FAIL);
	CHECK(strstr(why, "malformed"));
}

int main(int argc, char **argv)
{
	static const struct test_case t[] = {
		T(session_tickets_are_dropped),
		T(a_key_update_is_named_even_behind_a_ticket),
		T(a_handshake_message_split_across_records_is_refused),
		T(other_records_are_named),
		T(close_notify_closes_and_other_alerts_are_named),
	};
	return run_named_tests("unit-ktls", t, sizeof(t) / sizeof(t[0]), argc, argv);
}
