// Command gcfg-oracle decodes cloud.conf text from stdin with the real gcfg (gopkg.in/gcfg.v1,
// the parser the upstream OpenStack CCM uses) and prints what it decoded as JSON on stdout.
// tests/it/gcfg_oracle.rs and controller/tests/it/oracle.rs drive it; scripts/test-tools.sh builds
// it (DESIGN §8).
//
//	gcfg-oracle          decode into a mirror of the CCM's whole Config, as the CCM does:
//	                     gcfg.FatalOnly(gcfg.ReadInto(&cfg, r)); prints one object keyed by
//	                     section and key as they are spelled in cloud.conf (every key, set or
//	                     not). The generator's and the controller's tests both use it.
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
	"time"

	"gopkg.in/gcfg.v1"
)

// duration is util.MyDuration: time.ParseDuration, so a unit is required.
type duration struct{ time.Duration }

func (d *duration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	if err == nil {
		d.Duration = v
	}
	return err
}

func (d duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

type lbClass struct {
	FloatingNetworkID  string `gcfg:"floating-network-id" json:"floating-network-id"`
	FloatingSubnetID   string `gcfg:"floating-subnet-id" json:"floating-subnet-id"`
	FloatingSubnet     string `gcfg:"floating-subnet" json:"floating-subnet"`
	FloatingSubnetTags string `gcfg:"floating-subnet-tags" json:"floating-subnet-tags"`
	NetworkID          string `gcfg:"network-id" json:"network-id"`
	SubnetID           string `gcfg:"subnet-id" json:"subnet-id"`
	MemberSubnetID     string `gcfg:"member-subnet-id" json:"member-subnet-id"`
}

// ccmConfig mirrors the upstream OpenStack CCM's Config (pkg/openstack/openstack.go, pkg/client
// AuthOpts, pkg/util/metadata) with the same gcfg names and Go types, plus the legacy in-tree
// provider's keys the installer writes (secret-name, secret-namespace, kubeconfig-path).
type ccmConfig struct {
	Global struct {
		AuthURL                     string `gcfg:"auth-url" json:"auth-url"`
		UserID                      string `gcfg:"user-id" json:"user-id"`
		Username                    string `gcfg:"username" json:"username"`
		Password                    string `gcfg:"password" json:"password"`
		TenantID                    string `gcfg:"tenant-id" json:"tenant-id"`
		TenantName                  string `gcfg:"tenant-name" json:"tenant-name"`
		TrustID                     string `gcfg:"trust-id" json:"trust-id"`
		TrusteeID                   string `gcfg:"trustee-id" json:"trustee-id"`
		TrusteePassword             string `gcfg:"trustee-password" json:"trustee-password"`
		DomainID                    string `gcfg:"domain-id" json:"domain-id"`
		DomainName                  string `gcfg:"domain-name" json:"domain-name"`
		TenantDomainID              string `gcfg:"tenant-domain-id" json:"tenant-domain-id"`
		TenantDomainName            string `gcfg:"tenant-domain-name" json:"tenant-domain-name"`
		UserDomainID                string `gcfg:"user-domain-id" json:"user-domain-id"`
		UserDomainName              string `gcfg:"user-domain-name" json:"user-domain-name"`
		Region                      string `gcfg:"region" json:"region"`
		EndpointType                string `gcfg:"os-endpoint-type" json:"os-endpoint-type"`
		CAFile                      string `gcfg:"ca-file" json:"ca-file"`
		TLSInsecure                 string `gcfg:"tls-insecure" json:"tls-insecure"`
		Token                       string `gcfg:"token" json:"token"`
		CertFile                    string `gcfg:"cert-file" json:"cert-file"`
		KeyFile                     string `gcfg:"key-file" json:"key-file"`
		UseClouds                   bool   `gcfg:"use-clouds" json:"use-clouds"`
		CloudsFile                  string `gcfg:"clouds-file" json:"clouds-file"`
		Cloud                       string `gcfg:"cloud" json:"cloud"`
		ApplicationCredentialID     string `gcfg:"application-credential-id" json:"application-credential-id"`
		ApplicationCredentialName   string `gcfg:"application-credential-name" json:"application-credential-name"`
		ApplicationCredentialSecret string `gcfg:"application-credential-secret" json:"application-credential-secret"`
		// The legacy in-tree provider's keys (the OpenShift installer writes them).
		SecretName      string `gcfg:"secret-name" json:"secret-name"`
		SecretNamespace string `gcfg:"secret-namespace" json:"secret-namespace"`
		KubeconfigPath  string `gcfg:"kubeconfig-path" json:"kubeconfig-path"`
	} `json:"Global"`
	Networking struct {
		IPv6SupportDisabled bool     `gcfg:"ipv6-support-disabled" json:"ipv6-support-disabled"`
		PublicNetworkName   []string `gcfg:"public-network-name" json:"public-network-name"`
		InternalNetworkName []string `gcfg:"internal-network-name" json:"internal-network-name"`
		AddressSortOrder    string   `gcfg:"address-sort-order" json:"address-sort-order"`
	} `json:"Networking"`
	LoadBalancer struct {
		Enabled                        bool     `gcfg:"enabled" json:"enabled"`
		LBVersion                      string   `gcfg:"lb-version" json:"lb-version"`
		SubnetID                       string   `gcfg:"subnet-id" json:"subnet-id"`
		MemberSubnetID                 string   `gcfg:"member-subnet-id" json:"member-subnet-id"`
		NetworkID                      string   `gcfg:"network-id" json:"network-id"`
		FloatingNetworkID              string   `gcfg:"floating-network-id" json:"floating-network-id"`
		FloatingSubnetID               string   `gcfg:"floating-subnet-id" json:"floating-subnet-id"`
		FloatingSubnet                 string   `gcfg:"floating-subnet" json:"floating-subnet"`
		FloatingSubnetTags             string   `gcfg:"floating-subnet-tags" json:"floating-subnet-tags"`
		LBMethod                       string   `gcfg:"lb-method" json:"lb-method"`
		LBProvider                     string   `gcfg:"lb-provider" json:"lb-provider"`
		CreateMonitor                  bool     `gcfg:"create-monitor" json:"create-monitor"`
		MonitorDelay                   duration `gcfg:"monitor-delay" json:"monitor-delay"`
		MonitorTimeout                 duration `gcfg:"monitor-timeout" json:"monitor-timeout"`
		MonitorMaxRetries              uint     `gcfg:"monitor-max-retries" json:"monitor-max-retries"`
		MonitorMaxRetriesDown          uint     `gcfg:"monitor-max-retries-down" json:"monitor-max-retries-down"`
		ManageSecurityGroups           bool     `gcfg:"manage-security-groups" json:"manage-security-groups"`
		InternalLB                     bool     `gcfg:"internal-lb" json:"internal-lb"`
		NodeSelector                   string   `gcfg:"node-selector" json:"node-selector"`
		CascadeDelete                  bool     `gcfg:"cascade-delete" json:"cascade-delete"`
		FlavorID                       string   `gcfg:"flavor-id" json:"flavor-id"`
		AvailabilityZone               string   `gcfg:"availability-zone" json:"availability-zone"`
		EnableIngressHostname          bool     `gcfg:"enable-ingress-hostname" json:"enable-ingress-hostname"`
		IngressHostnameSuffix          string   `gcfg:"ingress-hostname-suffix" json:"ingress-hostname-suffix"`
		MaxSharedLB                    int      `gcfg:"max-shared-lb" json:"max-shared-lb"`
		ContainerStore                 string   `gcfg:"container-store" json:"container-store"`
		ProviderRequiresSerialAPICalls bool     `gcfg:"provider-requires-serial-api-calls" json:"provider-requires-serial-api-calls"`
		DefaultTLSContainerRef         string   `gcfg:"default-tls-container-ref" json:"default-tls-container-ref"`
	} `json:"LoadBalancer"`
	LoadBalancerClass map[string]*lbClass `json:"LoadBalancerClass"`
	Metadata          struct {
		SearchOrder    string   `gcfg:"search-order" json:"search-order"`
		RequestTimeout duration `gcfg:"request-timeout" json:"request-timeout"`
	} `json:"Metadata"`
	Route struct {
		RouterID string `gcfg:"router-id" json:"router-id"`
	} `json:"Route"`
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
