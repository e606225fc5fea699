use serde_json::json;

use super::*;
use crate::controllers::service::annotations::Settings;

#[test]
fn the_ingress_is_upstreams_ip_with_its_mode_or_a_hostname() {
    let plain = Settings::default();
    assert_eq!(ingress(&plain, "192.0.2.7"), json!([{"ip": "192.0.2.7", "ipMode": "VIP"}]));
    let proxy = Settings { proxy_protocol: Some("PROXY"), ..Settings::default() };
    assert_eq!(ingress(&proxy, "192.0.2.7"), json!([{"ip": "192.0.2.7", "ipMode": "Proxy"}]));
    let suffix = Some("nip.io".to_owned());
    let named = Settings { ingress_hostname_suffix: suffix.clone(), ..proxy.clone() };
    assert_eq!(ingress(&named, "192.0.2.7"), json!([{"hostname": "192.0.2.7.nip.io"}]));
    // Without the PROXY protocol the suffix changes nothing.
    let tcp = Settings { ingress_hostname_suffix: suffix, ..plain };
    assert_eq!(ingress(&tcp, "192.0.2.7")[0]["ip"], "192.0.2.7");
    let annotated = Settings { hostname: Some("lb.example.com".into()), ..named };
    assert_eq!(ingress(&annotated, "192.0.2.7"), json!([{"hostname": "lb.example.com"}]));
}
