// Command gcfg-oracle decodes cloud.conf text from stdin with the real gcfg (gopkg.in/gcfg.v1,
// the parser the upstream OpenStack CCM uses) and prints what it decoded as JSON on stdout.
// tests/it/gcfg_oracle.rs drives it; scripts/test-tools.sh builds it (DESIGN §8).
//
//	gcfg-oracle          decode into the CCM's sections and keys (the ones we write), as the
//	                     CCM does: gcfg.FatalOnly(gcfg.ReadInto(&cfg, r)); prints one object
//	                     keyed by section and key as they are spelled in cloud.conf.
//	                     A fatal error goes to stderr with exit status 1.
//	gcfg-oracle probe    many documents on stdin, separated by NUL bytes, each decoded on its
//	                     own into the probe struct below (multi-valued keys, so every value of
//	                     a repeated key is kept); prints one JSON array with, per document,
//	                     {"ok": {...}} or {"error": "..."}. One process for a whole batch.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"gopkg.in/gcfg.v1"
)

// ccmConfig mirrors the parts of the upstream CCM's Config (pkg/openstack/openstack.go,
// pkg/client AuthOpts) that ccm-assets writes, with the same gcfg names and Go types.
// secret-name, secret-namespace and kubeconfig-path are the legacy provider's keys the
// bootstrap cloud.conf keeps.
type ccmConfig struct {
	Global struct {
		AuthURL         string `gcfg:"auth-url" json:"auth-url"`
		Username        string `gcfg:"username" json:"username"`
		Password        string `gcfg:"password" json:"password"`
		TenantID        string `gcfg:"tenant-id" json:"tenant-id"`
		TenantName      string `gcfg:"tenant-name" json:"tenant-name"`
		DomainID        string `gcfg:"domain-id" json:"domain-id"`
		DomainName      string `gcfg:"domain-name" json:"domain-name"`
		Region          string `gcfg:"region" json:"region"`
		CAFile          string `gcfg:"ca-file" json:"ca-file"`
		SecretName      string `gcfg:"secret-name" json:"secret-name"`
		SecretNamespace string `gcfg:"secret-namespace" json:"secret-namespace"`
		KubeconfigPath  string `gcfg:"kubeconfig-path" json:"kubeconfig-path"`
		UseClouds       bool   `gcfg:"use-clouds" json:"use-clouds"`
		CloudsFile      string `gcfg:"clouds-file" json:"clouds-file"`
		Cloud           string `gcfg:"cloud" json:"cloud"`
	} `json:"Global"`
	LoadBalancer struct {
		Enabled              bool   `gcfg:"enabled" json:"enabled"`
		FloatingNetworkID    string `gcfg:"floating-network-id" json:"floating-network-id"`
		MaxSharedLB          int    `gcfg:"max-shared-lb" json:"max-shared-lb"`
		ManageSecurityGroups bool   `gcfg:"manage-security-groups" json:"manage-security-groups"`
	} `json:"LoadBalancer"`
	Networking struct {
		PublicNetworkName   []string `gcfg:"public-network-name" json:"public-network-name"`
		InternalNetworkName []string `gcfg:"internal-network-name" json:"internal-network-name"`
		AddressSortOrder    string   `gcfg:"address-sort-order" json:"address-sort-order"`
	} `json:"Networking"`
}

// values is a probe section: every key multi-valued, so a document's every value is visible
// (a key with no `=` resets the list, as gcfg defines for multi-valued variables).
type values struct {
	X []string `gcfg:"x" json:"x"`
	Y []string `gcfg:"y" json:"y"`
}

// globalValues batches the values our writers put in [Global]: every password of many
// concatenated clouds.conf files, every region of many cloud.conf files.
type globalValues struct {
	Password []string `gcfg:"password" json:"password"`
	Region   []string `gcfg:"region" json:"region"`
}

// probe holds [Global], two plain sections and one with subsections; any other section or key
// is an unknown name, a warning that FatalOnly drops (its syntax is still checked).
type probe struct {
	Global globalValues       `gcfg:"global" json:"Global"`
	A      values             `gcfg:"a" json:"a"`
	B      values             `gcfg:"b" json:"b"`
	S      map[string]*values `gcfg:"s" json:"s"`
}

type result struct {
	OK    *probe `json:"ok,omitempty"`
	Error string `json:"error,omitempty"`
}

func main() {
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	switch {
	case len(os.Args) == 1:
		var cfg ccmConfig
		// As the CCM's ReadConfig does: warnings (unknown names) are not errors.
		if err := gcfg.FatalOnly(gcfg.ReadInto(&cfg, bytes.NewReader(input))); err != nil {
			fail(err)
		}
		emit(cfg)
	case len(os.Args) == 2 && os.Args[1] == "probe":
		docs := bytes.Split(input, []byte{0})
		results := make([]result, 0, len(docs))
		for _, doc := range docs {
			results = append(results, decodeProbe(doc))
		}
		emit(results)
	default:
		fmt.Fprintln(os.Stderr, "usage: gcfg-oracle [probe] < cloud.conf")
		os.Exit(2)
	}
}

func decodeProbe(doc []byte) (r result) {
	// gcfg panics on a few inputs its scanner lets through; a panic is a rejection too.
	defer func() {
		if p := recover(); p != nil {
			r = result{Error: fmt.Sprintf("panic: %v", p)}
		}
	}()
	var p probe
	if err := gcfg.FatalOnly(gcfg.ReadInto(&p, bytes.NewReader(doc))); err != nil {
		return result{Error: err.Error()}
	}
	for _, v := range append([]*values{&p.A, &p.B}, mapValues(p.S)...) {
		v.normalize()
	}
	if p.Global.Password == nil {
		p.Global.Password = []string{}
	}
	if p.Global.Region == nil {
		p.Global.Region = []string{}
	}
	return result{OK: &p}
}

func mapValues(m map[string]*values) []*values {
	out := make([]*values, 0, len(m))
	for _, v := range m {
		if v != nil {
			out = append(out, v)
		}
	}
	return out
}

// normalize prints an empty list as [] rather than null.
func (v *values) normalize() {
	if v.X == nil {
		v.X = []string{}
	}
	if v.Y == nil {
		v.Y = []string{}
	}
}

func emit(v interface{}) {
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	if err := out.Encode(v); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
