/* Prints libibumad's names for every management class, method, status and attribute id the Go test
 * compares with umad's (names_test.go). Built by the test with gcc against the installed libibumad.so.3;
 * the prototypes are declared here so libibumad-dev is not needed. */
#include <endian.h>
#include <stdint.h>
#include <stdio.h>

const char *umad_class_str(uint8_t mgmt_class);
const char *umad_method_str(uint8_t mgmt_class, uint8_t method);
const char *umad_common_mad_status_str(uint16_t status_be);
const char *umad_sa_mad_status_str(uint16_t status_be);
const char *umad_attribute_str(uint8_t mgmt_class, uint16_t attr_be);

int main(void)
{
	static const int classes[] = {0x01, 0x81, 0x03, 0x04, 0x07, 0x10};
	unsigned i, c;

	for (i = 0; i < 256; i++)
		printf("class %u %s\n", i, umad_class_str(i));
	for (c = 0; c < sizeof(classes) / sizeof(classes[0]); c++)
		for (i = 0; i < 256; i++)
			printf("method %d %u %s\n", classes[c], i, umad_method_str(classes[c], i));
	for (i = 0; i < 65536; i++)
		printf("status %u %s|%s\n", i, umad_common_mad_status_str(htobe16(i)), umad_sa_mad_status_str(htobe16(i)));
	for (c = 0; c < sizeof(classes) / sizeof(classes[0]); c++)
		for (i = 0; i < 65536; i++)
			printf("attr %d %u %s\n", classes[c], i, umad_attribute_str(classes[c], htobe16(i)));
	return 0;
}
