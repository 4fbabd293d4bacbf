package ratelimit

import "strings"

// clusterSlots is the number of hash slots of Redis Cluster.
const clusterSlots = 16384

// KeySlot is the Redis Cluster hash slot of key, as CLUSTER KEYSLOT computes
// it: CRC16 (XMODEM) of the key's hash tag — the part between the first "{"
// and the first "}" after it, when that part is not empty — or of the whole
// key, modulo 16384. Keys with the same slot may be used by one script on a
// cluster; keys in different slots get CROSSSLOT.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % clusterSlots)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial 0), the checksum
// Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
