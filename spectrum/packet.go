package spectrum

import "encoding/binary"

// Header sizes of the pseudo packet: an IPv4 header without options and a
// TCP header without options, then a small payload.
const (
	ipv4HeaderLen = 20
	tcpHeaderLen  = 20
	// PacketPayload is the pseudo packet's payload in bytes: a small
	// request, like the ~100-byte messages of RPC-style service traffic.
	PacketPayload = 64
	packetLen     = ipv4HeaderLen + tcpHeaderLen + PacketPayload
)

// Packet is the "work" mode's pseudo packet: the background thread touches
// IPv4 and TCP header fields and computes both checksums, the per-packet work
// of a software network stack, without any I/O.
type Packet struct {
	buf [packetLen]byte
}

// NewPacket returns a packet from 10.0.0.1:40000 to 10.0.0.2:80 with a
// deterministic payload.
func NewPacket() *Packet {
	p := &Packet{}
	b := p.buf[:]
	b[0] = 0x45 // version 4, header length 5 words
	binary.BigEndian.PutUint16(b[2:], packetLen)
	b[8] = 64 // TTL
	b[9] = 6  // protocol TCP
	copy(b[12:16], []byte{10, 0, 0, 1})
	copy(b[16:20], []byte{10, 0, 0, 2})
	t := b[ipv4HeaderLen:]
	binary.BigEndian.PutUint16(t[0:], 40000)
	binary.BigEndian.PutUint16(t[2:], 80)
	t[12] = 5 << 4 // data offset 5 words
	t[13] = 0x18   // PSH, ACK
	binary.BigEndian.PutUint16(t[14:], 65535)
	for i := range b[ipv4HeaderLen+tcpHeaderLen:] {
		b[ipv4HeaderLen+tcpHeaderLen+i] = byte(i)
	}
	return p
}

// Process handles the packet as a stack would on receive-and-forward: it
// advances the IP identification and the TCP sequence and acknowledgement
// numbers, decrements the TTL, and recomputes the IPv4 header checksum and
// the TCP checksum over the pseudo header, header and payload. It returns
// the TCP checksum so the work cannot be optimised away.
func (p *Packet) Process() uint16 {
	b := p.buf[:]
	ip, tcp := b[:ipv4HeaderLen], b[ipv4HeaderLen:]
	binary.BigEndian.PutUint16(ip[4:], binary.BigEndian.Uint16(ip[4:])+1)
	if ip[8]--; ip[8] == 0 {
		ip[8] = 64
	}
	binary.BigEndian.PutUint32(tcp[4:], binary.BigEndian.Uint32(tcp[4:])+PacketPayload)
	binary.BigEndian.PutUint32(tcp[8:], binary.BigEndian.Uint32(tcp[8:])+1)
	ip[10], ip[11] = 0, 0
	binary.BigEndian.PutUint16(ip[10:], Checksum(ip))
	// TCP pseudo header: source, destination, zero, protocol, TCP length.
	s := sum16(0, ip[12:20])
	s += uint64(ip[9]) + uint64(len(tcp))
	tcp[16], tcp[17] = 0, 0
	c := ^fold(sum16(s, tcp))
	binary.BigEndian.PutUint16(tcp[16:], c)
	return c
}

// Bytes returns the packet's bytes (for tests).
func (p *Packet) Bytes() []byte { return p.buf[:] }
