package main

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/proto"
)

// The vectors the TypeScript codec is checked against too (test/unit/payload-codec.test.ts).
const vectorsFile = "../../docs/payload-encryption-vectors.json"

type textPayload struct {
	Metadata map[string]string `json:"metadata"`
	DataUTF8 *string           `json:"data_utf8"`
	DataHex  *string           `json:"data_hex"`
}

type vectors struct {
	Keys []struct {
		ID     string `json:"id"`
		KeyHex string `json:"key_hex"`
	} `json:"keys"`
	Vectors []struct {
		Name         string      `json:"name"`
		KeyID        string      `json:"key_id"`
		NonceHex     string      `json:"nonce_hex"`
		Payload      textPayload `json:"payload"`
		PlaintextHex string      `json:"plaintext_hex"`
		Encrypted    textPayload `json:"encrypted"`
	} `json:"vectors"`
	MustFail []struct {
		Name      string      `json:"name"`
		Encrypted textPayload `json:"encrypted"`
	} `json:"must_fail"`
}

func loadVectors(t *testing.T) (vectors, []PayloadKey) {
	raw, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var keys []PayloadKey
	for _, k := range v.Keys {
		b, err := hex.DecodeString(k.KeyHex)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, PayloadKey{ID: k.ID, Key: b})
	}
	if len(v.Vectors) < 4 || len(v.MustFail) < 3 {
		t.Fatalf("expected at least 4 vectors and 3 failing cases, got %d and %d", len(v.Vectors), len(v.MustFail))
	}
	return v, keys
}

func toPayload(t *testing.T, p textPayload) *commonpb.Payload {
	out := &commonpb.Payload{Metadata: map[string][]byte{}}
	for k, v := range p.Metadata {
		out.Metadata[k] = []byte(v)
	}
	switch {
	case p.DataHex != nil:
		b, err := hex.DecodeString(*p.DataHex)
		if err != nil {
			t.Fatal(err)
		}
		out.Data = b
	case p.DataUTF8 != nil && *p.DataUTF8 != "":
		out.Data = []byte(*p.DataUTF8)
	}
	return out
}

func TestVectorsEncrypt(t *testing.T) {
	v, keys := loadVectors(t)
	for _, vec := range v.Vectors {
		t.Run(vec.Name, func(t *testing.T) {
			ordered := []PayloadKey{}
			for _, k := range keys {
				if k.ID == vec.KeyID {
					ordered = append([]PayloadKey{k}, ordered...)
				} else {
					ordered = append(ordered, k)
				}
			}
			nonce, _ := hex.DecodeString(vec.NonceHex)
			codec, err := NewAESGCMCodec(ordered, func() ([]byte, error) { return nonce, nil })
			if err != nil {
				t.Fatal(err)
			}
			payload := toPayload(t, vec.Payload)
			plain, err := proto.Marshal(payload)
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(plain); got != vec.PlaintextHex {
				t.Fatalf("plaintext %s, want %s", got, vec.PlaintextHex)
			}
			enc, err := codec.Encode([]*commonpb.Payload{payload})
			if err != nil {
				t.Fatal(err)
			}
			want := toPayload(t, vec.Encrypted)
			if !proto.Equal(enc[0], want) {
				t.Fatalf("encrypted %x %v, want %x %v", enc[0].Data, enc[0].Metadata, want.Data, want.Metadata)
			}
		})
	}
}

func TestVectorsDecrypt(t *testing.T) {
	v, keys := loadVectors(t)
	codec, err := NewAESGCMCodec(keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, vec := range v.Vectors {
		t.Run(vec.Name, func(t *testing.T) {
			dec, err := codec.Decode([]*commonpb.Payload{toPayload(t, vec.Encrypted)})
			if err != nil {
				t.Fatal(err)
			}
			if want := toPayload(t, vec.Payload); !proto.Equal(dec[0], want) {
				t.Fatalf("decrypted %v, want %v", dec[0], want)
			}
		})
	}
	for _, bad := range v.MustFail {
		t.Run("refuses "+bad.Name, func(t *testing.T) {
			if _, err := codec.Decode([]*commonpb.Payload{toPayload(t, bad.Encrypted)}); err == nil {
				t.Fatal("decoded a payload that must be refused")
			}
		})
	}
}

func TestRoundTripWithRandomNonces(t *testing.T) {
	_, keys := loadVectors(t)
	codec, err := NewAESGCMCodec(keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`"Erika Mustermann"`)}
	a, _ := codec.Encode([]*commonpb.Payload{p})
	b, _ := codec.Encode([]*commonpb.Payload{p})
	if string(a[0].Data) == string(b[0].Data) {
		t.Fatal("two encryptions of one payload are equal: the nonce is not fresh")
	}
	dec, err := codec.Decode(a)
	if err != nil || !proto.Equal(dec[0], p) {
		t.Fatalf("round trip failed: %v", err)
	}
}

func TestKeysFromEnv(t *testing.T) {
	keys, err := KeysFromEnv("new:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=, old://79/Pv6+fj39vX08/Lx8O/u7ezr6uno5+bl5OPi4eA=")
	if err != nil || len(keys) != 2 || keys[0].ID != "new" || len(keys[1].Key) != 32 {
		t.Fatalf("parsed %v, %v", keys, err)
	}
	if _, err := KeysFromEnv("a:c2hvcnQ="); err == nil {
		t.Fatal("accepted a short key")
	}
}
