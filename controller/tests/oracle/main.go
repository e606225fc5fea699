// Command occm-config-oracle decodes cloud.conf from stdin into a mirror of the upstream
// OpenStack CCM's Config (pkg/openstack/openstack.go, pkg/client AuthOpts,
// pkg/util/metadata) with the real gcfg, exactly as the CCM does
// (gcfg.FatalOnly(gcfg.ReadInto(&cfg, r))), and prints it as JSON keyed by the cloud.conf
// names. A fatal error goes to stderr with exit status 1. The controller's tests
// (controller/tests/it/oracle.rs) build it with Debian's Go and gcfg, no network.
package main

import (
	"encoding/json"
	"fmt"
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

type config struct {
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

func main() {
	var cfg config
	if err := gcfg.FatalOnly(gcfg.ReadInto(&cfg, os.Stdin)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := json.Marshal(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}
