//! The JSON Schema keywords that `docs/trace-event.schema.json` uses, and
//! no more: `type`, `required`, `properties`, `items`, `oneOf`, `enum`,
//! `minimum`, and `$ref` to `#/definitions/NAME`. A keyword it does not
//! know is an error, so that the schema cannot say more than is checked.

use serde_json::Value;

/// Checks `v` against `schema` (whose `definitions` `root` holds);
/// returns the first violation, as a JSON pointer and what is wrong.
pub fn validate(root: &Value, schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    let Some(obj) = schema.as_object() else { return Err(format!("{at}: schema is not an object")) };
    for (key, want) in obj {
        match key.as_str() {
            "$schema" | "$comment" | "title" | "definitions" => {}
            "$ref" => {
                let name = want.as_str().and_then(|r| r.strip_prefix("#/definitions/")).ok_or_else(|| format!("{at}: $ref {want} is not #/definitions/NAME"))?;
                let target = root.get("definitions").and_then(|d| d.get(name)).ok_or_else(|| format!("{at}: no definition {name}"))?;
                validate(root, target, v, at)?;
            }
            "type" => {
                let ok = match want.as_str() {
                    Some("object") => v.is_object(),
                    Some("array") => v.is_array(),
                    Some("string") => v.is_string(),
                    Some("integer") => v.is_i64() || v.is_u64(),
                    Some("number") => v.is_number(),
                    Some("boolean") => v.is_boolean(),
                    other => return Err(format!("{at}: unknown type {other:?}")),
                };
                if !ok {
                    return Err(format!("{at}: {v} is not of type {want}"));
                }
            }
            "required" => {
                for name in want.as_array().into_iter().flatten().filter_map(|n| n.as_str()) {
                    if v.is_object() && v.get(name).is_none() {
                        return Err(format!("{at}: required property '{name}' is missing from {v}"));
                    }
                }
            }
            "properties" => {
                if let (Some(props), Some(o)) = (want.as_object(), v.as_object()) {
                    for (name, sub) in props {
                        if let Some(x) = o.get(name) {
                            validate(root, sub, x, &format!("{at}/{name}"))?;
                        }
                    }
                }
            }
            "items" => {
                for (i, x) in v.as_array().into_iter().flatten().enumerate() {
                    validate(root, want, x, &format!("{at}/{i}"))?;
                }
            }
            "oneOf" => {
                let alts = want.as_array().ok_or_else(|| format!("{at}: oneOf is not an array"))?;
                let fits: Vec<Result<(), String>> = alts.iter().map(|s| validate(root, s, v, at)).collect();
                match fits.iter().filter(|r| r.is_ok()).count() {
                    1 => {}
                    0 => return Err(format!("{at}: {v} fits none of oneOf: {:?}", fits.iter().filter_map(|r| r.as_ref().err()).collect::<Vec<_>>())),
                    n => return Err(format!("{at}: {v} fits {n} of oneOf")),
                }
            }
            "enum" => {
                if !want.as_array().is_some_and(|a| a.contains(v)) {
                    return Err(format!("{at}: {v} is not one of {want}"));
                }
            }
            "minimum" => {
                if let (Some(x), Some(min)) = (v.as_f64(), want.as_f64()) {
                    if x < min {
                        return Err(format!("{at}: {v} is below the minimum {want}"));
                    }
                }
            }
            other => return Err(format!("{at}: the schema uses '{other}', which this validator does not check")),
        }
    }
    Ok(())
}

#[test]
fn the_validator_refuses_what_the_schema_forbids() {
    let root: Value = serde_json::from_str(r##"{"definitions":{"n":{"type":"integer","minimum":0}},
        "type":"object","required":["a"],"properties":{"a":{"type":"array","items":{"oneOf":[{"$ref":"#/definitions/n"},{"enum":["x"]}]}}}}"##).unwrap();
    let ok: Value = serde_json::from_str(r#"{"a":[0,3,"x"]}"#).unwrap();
    validate(&root, &root, &ok, "").unwrap();
    for bad in [r#"{}"#, r#"{"a":[-1]}"#, r#"{"a":["y"]}"#, r#"{"a":[1.5]}"#, r#"[]"#] {
        let v: Value = serde_json::from_str(bad).unwrap();
        assert!(validate(&root, &root, &v, "").is_err(), "{bad} passed");
    }
    let unknown: Value = serde_json::from_str(r#"{"pattern":"x"}"#).unwrap();
    assert!(validate(&unknown, &unknown, &ok, "").is_err());
}
