//! Recognising V2 paths: `/v2/models/{name}[/versions/{v}][/{action}]`.

/// What a request path addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum V2Path {
    /// A model endpoint.
    Model {
        name: String,
        version: Option<String>,
        /// The segment after the model (and version): `infer`, `ready`,
        /// `generate_stream`, ...; `None` for model metadata.
        action: Option<String>,
    },
    /// Anything else (`/v2`, health, repository, unknown paths).
    Other,
}

impl V2Path {
    pub fn parse(path: &str) -> V2Path {
        let Some(rest) = path.strip_prefix("/v2/models/") else {
            return V2Path::Other;
        };
        let mut segments = rest.split('/');
        let Some(name) = segments.next().filter(|n| !n.is_empty()) else {
            return V2Path::Other;
        };
        let mut version = None;
        let mut action = segments.next();
        if action == Some("versions") {
            version = segments.next().map(percent_decode);
            action = segments.next();
        }
        let action = action.filter(|a| !a.is_empty()).map(str::to_owned);
        if segments.next().is_some() {
            return V2Path::Other;
        }
        V2Path::Model {
            name: percent_decode(name),
            version,
            action,
        }
    }

    /// The model named, if any.
    pub fn model(&self) -> Option<&str> {
        match self {
            V2Path::Model { name, .. } => Some(name),
            V2Path::Other => None,
        }
    }

    pub fn is_infer(&self) -> bool {
        matches!(self, V2Path::Model { action: Some(a), .. } if a == "infer")
    }
}

/// Decodes `%XX` escapes (model names are path segments). Invalid escapes
/// are kept as they are.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(v) = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(name: &str, version: Option<&str>, action: Option<&str>) -> V2Path {
        V2Path::Model {
            name: name.into(),
            version: version.map(Into::into),
            action: action.map(Into::into),
        }
    }

    #[test]
    fn paths() {
        assert_eq!(
            V2Path::parse("/v2/models/simple/infer"),
            model("simple", None, Some("infer"))
        );
        assert_eq!(
            V2Path::parse("/v2/models/simple/versions/3/infer"),
            model("simple", Some("3"), Some("infer"))
        );
        assert_eq!(
            V2Path::parse("/v2/models/simple"),
            model("simple", None, None)
        );
        assert_eq!(
            V2Path::parse("/v2/models/simple/versions/2"),
            model("simple", Some("2"), None)
        );
        assert_eq!(
            V2Path::parse("/v2/models/a%20b/ready"),
            model("a b", None, Some("ready"))
        );
        assert_eq!(
            V2Path::parse("/v2/models/m/generate_stream"),
            model("m", None, Some("generate_stream"))
        );
        assert_eq!(V2Path::parse("/v2"), V2Path::Other);
        assert_eq!(V2Path::parse("/v2/models/"), V2Path::Other);
        assert_eq!(V2Path::parse("/v2/models/m/infer/extra"), V2Path::Other);
        assert_eq!(V2Path::parse("/v2/health/ready"), V2Path::Other);
        assert!(V2Path::parse("/v2/models/m/infer").is_infer());
    }
}
