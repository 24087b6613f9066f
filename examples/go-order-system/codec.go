package main

// The delivery orchestrator's payload codec (docs/payload-encryption.md): AES-256-GCM over the
// protobuf encoding of each payload, nonce ‖ ciphertext ‖ tag in data, the key id in metadata.
// Checked against docs/payload-encryption-vectors.json by codec_test.go.

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/proto"
)

const (
	encodingEncrypted = "binary/encrypted"
	metaEncoding      = "encoding"
	metaKeyID         = "encryption-key-id"
	metaCipher        = "encryption-cipher"
	cipherName        = "AES256GCM"
	nonceBytes        = 12
	tagBytes          = 16
)

// PayloadKey is one AES-256 key and its id.
type PayloadKey struct {
	ID  string
	Key []byte
}

// AESGCMCodec implements converter.PayloadCodec: Keys[0] encrypts, every key decrypts.
type AESGCMCodec struct {
	keys  []PayloadKey
	byID  map[string]cipher.AEAD
	nonce func() ([]byte, error)
}

// NewAESGCMCodec builds the codec; nonce is nil except in tests of the fixed vectors.
func NewAESGCMCodec(keys []PayloadKey, nonce func() ([]byte, error)) (*AESGCMCodec, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("the payload codec needs at least one key")
	}
	c := &AESGCMCodec{keys: keys, byID: map[string]cipher.AEAD{}, nonce: nonce}
	for _, k := range keys {
		if len(k.Key) != 32 {
			return nil, fmt.Errorf("payload key %s must be 32 bytes (AES-256), not %d", k.ID, len(k.Key))
		}
		block, err := aes.NewCipher(k.Key)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block) // 12-byte nonce, 16-byte tag
		if err != nil {
			return nil, err
		}
		c.byID[k.ID] = aead
	}
	if c.nonce == nil {
		c.nonce = func() ([]byte, error) {
			n := make([]byte, nonceBytes)
			_, err := rand.Read(n)
			return n, err
		}
	}
	return c, nil
}

var keyEntry = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}:[A-Za-z0-9+/]{43}=$`)

// KeysFromEnv parses DELIVERY_PAYLOAD_KEYS: id:base64(32 bytes), comma- or space-separated.
func KeysFromEnv(value string) ([]PayloadKey, error) {
	var keys []PayloadKey
	for i, entry := range strings.FieldsFunc(value, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }) {
		if !keyEntry.MatchString(entry) {
			return nil, fmt.Errorf("DELIVERY_PAYLOAD_KEYS[%d]: each key must be <id>:<base64 of 32 bytes>", i)
		}
		id, b64, _ := strings.Cut(entry, ":")
		key, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("DELIVERY_PAYLOAD_KEYS[%d]: %v", i, err)
		}
		keys = append(keys, PayloadKey{ID: id, Key: key})
	}
	return keys, nil
}

// Encode encrypts each payload with the first key.
func (c *AESGCMCodec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	active := c.keys[0]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, err
		}
		nonce, err := c.nonce()
		if err != nil {
			return nil, err
		}
		if len(nonce) != nonceBytes {
			return nil, fmt.Errorf("a payload nonce must be %d bytes", nonceBytes)
		}
		// Seal appends ciphertext ‖ tag to the nonce: nonce ‖ ciphertext ‖ tag.
		data := c.byID[active.ID].Seal(append([]byte{}, nonce...), nonce, plain, nil)
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				metaEncoding: []byte(encodingEncrypted),
				metaKeyID:    []byte(active.ID),
				metaCipher:   []byte(cipherName),
			},
			Data: data,
		}
	}
	return out, nil
}

// Decode decrypts encrypted payloads with the key they name and passes others through.
func (c *AESGCMCodec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[metaEncoding]) != encodingEncrypted {
			out[i] = p
			continue
		}
		if got, ok := p.GetMetadata()[metaCipher]; ok && string(got) != cipherName {
			return nil, fmt.Errorf("encrypted payload uses cipher %q; only %s is supported", got, cipherName)
		}
		keyID := string(p.GetMetadata()[metaKeyID])
		aead, ok := c.byID[keyID]
		if !ok {
			return nil, fmt.Errorf("no payload key with id %q is configured (DELIVERY_PAYLOAD_KEYS); cannot decrypt", keyID)
		}
		data := p.GetData()
		if len(data) < nonceBytes+tagBytes {
			return nil, fmt.Errorf("encrypted payload is too short")
		}
		plain, err := aead.Open(nil, data[:nonceBytes], data[nonceBytes:], nil)
		if err != nil {
			return nil, fmt.Errorf("cannot decrypt payload: %w", err)
		}
		var decoded commonpb.Payload
		if err := proto.Unmarshal(plain, &decoded); err != nil {
			return nil, err
		}
		out[i] = &decoded
	}
	return out, nil
}
