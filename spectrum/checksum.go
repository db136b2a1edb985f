package spectrum

import "encoding/binary"

// Checksum returns the Internet checksum of b (RFC 1071): the ones'
// complement of the ones'-complement sum of its 16-bit big-endian words, an
// odd final byte padded with zero. Verifying data that carries its own
// checksum yields 0.
func Checksum(b []byte) uint16 {
	return ^fold(sum16(0, b))
}

// sum16 adds b's big-endian 16-bit words to s without folding; 64 bits hold
// the carries of any packet shorter than 2^48 words.
func sum16(s uint64, b []byte) uint64 {
	for len(b) >= 8 {
		v := binary.BigEndian.Uint64(b)
		s += v>>48 + v>>32&0xffff + v>>16&0xffff + v&0xffff
		b = b[8:]
	}
	for len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	return s
}

// fold reduces a wide sum to 16 bits with end-around carry.
func fold(s uint64) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}
