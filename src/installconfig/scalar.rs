//! Value types of the install-config model: secrets, accepted-and-dropped fields, closed string sets.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

/// A secret string (a vCenter or Prism password): serialized as is, never shown by `Debug`.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the few places that must write it out (a credentials Secret).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the secret is empty, which the installer treats as unset.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// A field accepted on input and never stored or written out (the pull secret).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dropped;

impl<'de> Deserialize<'de> for Dropped {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Not `IgnoredAny`: serde_ignored reports every `deserialize_ignored_any` as an unknown
        // field, and `pullSecret` is a known one.
        serde_json::Value::deserialize(deserializer)?;
        Ok(Self)
    }
}

/// Deserializes `null` as the type's default, as Go's YAML reader does for non-pointer fields.
pub(crate) fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A key that is present is `Some`, even when its value is `null` (`none:` selects platform none).
pub(crate) fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Some(Option::<T>::deserialize(deserializer)?.unwrap_or_default()))
}

/// Declares a closed set of upstream spellings plus `Other(String)`, so an unsupported value
/// reaches validation (and a field-path error) instead of failing the YAML parse.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
            /// A value outside the known set, kept verbatim so validation can name it.
            Other(String),
        }

        impl $name {
            /// Every known spelling, in the installer's order.
            pub const KNOWN: &'static [&'static str] = &[$($text),+];

            /// The spelling used in install-config.yaml.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $text,)+
                    Self::Other(text) => text,
                }
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                match text {
                    $($text => Self::$variant,)+
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                Ok(Self::from(text.as_str()))
            }
        }
    };
}

string_enum! {
    /// `credentialsMode`: how the cloud-credential operator handles cloud credentials.
    pub enum CredentialsMode {
        /// The operator mints narrowly scoped credentials.
        Mint = "Mint",
        /// The operator passes the admin credentials through.
        Passthrough = "Passthrough",
        /// The user manages credentials; no credentials Secret is written.
        Manual = "Manual",
    }
}

string_enum! {
    /// `publish`: how the cluster's endpoints are published.
    pub enum Publish {
        /// Public endpoints (the default).
        External = "External",
        /// Private endpoints only.
        Internal = "Internal",
        /// Per-component choice (Azure only).
        Mixed = "Mixed",
    }
}

string_enum! {
    /// `loadBalancer.type` on OpenStack, vSphere, Nutanix and bare metal.
    pub enum LoadBalancerType {
        /// keepalived/haproxy run by OpenShift (the default).
        OpenShiftManagedDefault = "OpenShiftManagedDefault",
        /// The user provides the load balancer; no default VIPs.
        UserManaged = "UserManaged",
    }
}

string_enum! {
    /// `platform.aws.ipFamily`.
    pub enum IpFamily {
        /// IPv4 only (the default).
        Ipv4 = "IPv4",
        /// Dual stack, IPv4 first.
        DualStackIpv4Primary = "DualStackIPv4Primary",
        /// Dual stack, IPv6 first.
        DualStackIpv6Primary = "DualStackIPv6Primary",
    }
}

string_enum! {
    /// `platform.azure.cloudName`.
    pub enum AzureCloudName {
        /// The public cloud (the default).
        Public = "AzurePublicCloud",
        /// Azure Government.
        UsGovernment = "AzureUSGovernmentCloud",
        /// Azure China.
        China = "AzureChinaCloud",
        /// Azure Germany.
        Germany = "AzureGermanCloud",
        /// Azure Stack Hub, which needs `armEndpoint`.
        Stack = "AzureStackCloud",
    }
}

string_enum! {
    /// `platform.external.cloudControllerManager`.
    pub enum CloudControllerManager {
        /// No external CCM is expected.
        None = "",
        /// An external CCM will be installed by the user.
        External = "External",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_spellings_are_kept_and_round_trip() {
        assert_eq!(Publish::from("Internal"), Publish::Internal);
        assert_eq!(Publish::from("internal"), Publish::Other("internal".into()));
        assert_eq!(Publish::from("internal").as_str(), "internal");
        let json = serde_json::to_string(&IpFamily::DualStackIpv6Primary).unwrap();
        assert_eq!(json, "\"DualStackIPv6Primary\"");
        let back: IpFamily = serde_json::from_str(&json).unwrap();
        assert_eq!(back, IpFamily::DualStackIpv6Primary);
    }

    #[test]
    fn secrets_are_redacted_in_debug() {
        let secret = Secret::new("hunter2");
        assert_eq!(format!("{secret:?}"), "<redacted>");
        assert_eq!(secret.expose(), "hunter2");
        assert_eq!(serde_json::to_string(&secret).unwrap(), "\"hunter2\"");
    }
}
