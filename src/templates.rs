//! The handlebars templates in `templates/`, embedded at build time: strict, no HTML escaping.

use handlebars::Handlebars;
use serde_json::json;

/// A template that failed to render (a missing variable, in strict mode).
pub(crate) type Error = handlebars::RenderError;

const BOOTKUBE: &str = include_str!("../templates/ccm-bootstrap.sh.hbs");

fn registry() -> Handlebars<'static> {
    let mut hb = Handlebars::new();
    hb.set_strict_mode(true);
    hb.register_escape_fn(handlebars::no_escape);
    hb
}

/// `bootkube/ccm-bootstrap.sh`, running `ccm-assets render` from `image`; the bootstrap
/// secrets it installs belong to the image's user.
pub(crate) fn bootkube_stage(image: &str) -> Result<String, Error> {
    let user = crate::assets::images::USER;
    registry().render_template(BOOTKUBE, &json!({"image": image, "user": user}))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_bootkube_stage_names_the_image_and_nothing_is_left_unrendered() {
        let text = super::bootkube_stage("quay.io/x/ccm-assets:v1").unwrap();
        assert!(text.contains("\t\t\"quay.io/x/ccm-assets:v1\" \\\n"), "{text}");
        assert!(!text.contains("{{"), "{text}");
    }
}
