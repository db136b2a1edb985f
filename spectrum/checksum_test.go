package spectrum

import (
	"encoding/binary"
	"encoding/hex"
	"testing"
)

func TestChecksumVectors(t *testing.T) {
	for _, tc := range []struct {
		name, hex string
		want      uint16
	}{
		// RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2.
		{"rfc1071", "0001f203f4f5f6f7", ^uint16(0xddf2)},
		// An IPv4 header with its checksum field zeroed (checksum b861).
		{"ipv4 header", "450000730000400040110000c0a80001c0a800c7", 0xb861},
		// The same header with the checksum in place verifies to zero.
		{"ipv4 verify", "45000073000040004011b861c0a80001c0a800c7", 0},
		// Odd length: the last byte is padded with zero (0x0100 + 0x0200).
		{"odd", "010002", ^uint16(0x0300)},
		{"empty", "", 0xffff},
		// Carries fold end-around: ffff + 0001 = 1 0000 -> 0001.
		{"carry", "ffff0001", ^uint16(0x0001)},
	} {
		b, err := hex.DecodeString(tc.hex)
		if err != nil {
			t.Fatal(err)
		}
		if got := Checksum(b); got != tc.want {
			t.Errorf("%s: got %#04x, want %#04x", tc.name, got, tc.want)
		}
	}
}

// slowChecksum is RFC 1071's reference loop, one 16-bit word at a time.
func slowChecksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func FuzzChecksum(f *testing.F) {
	f.Add([]byte{0, 1, 0xf2, 3, 0xf4, 0xf5, 0xf6, 0xf7})
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Checksum(b), slowChecksum(b); got != want {
			t.Fatalf("Checksum %#04x, reference %#04x", got, want)
		}
	})
}

func TestPacketProcessVerifies(t *testing.T) {
	p := NewPacket()
	for i := 0; i < 300; i++ {
		p.Process()
		b := p.Bytes()
		if c := Checksum(b[:ipv4HeaderLen]); c != 0 {
			t.Fatalf("packet %d: IPv4 header does not verify (%#04x)", i, c)
		}
		// TCP verifies over pseudo header + segment.
		tcp := b[ipv4HeaderLen:]
		pseudo := make([]byte, 12, 12+len(tcp))
		copy(pseudo, b[12:20])
		pseudo[9] = b[9]
		binary.BigEndian.PutUint16(pseudo[10:], uint16(len(tcp)))
		if c := Checksum(append(pseudo, tcp...)); c != 0 {
			t.Fatalf("packet %d: TCP segment does not verify (%#04x)", i, c)
		}
		if b[8] == 0 {
			t.Fatalf("packet %d: TTL reached zero", i)
		}
	}
	if id := binary.BigEndian.Uint16(p.Bytes()[4:]); id != 300 {
		t.Fatalf("IP id %d after 300 packets", id)
	}
}

func BenchmarkPacketProcess(b *testing.B) {
	b.ReportAllocs()
	p := NewPacket()
	for b.Loop() {
		p.Process()
	}
}
