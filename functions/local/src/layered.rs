//! The local server's layered settings (F3): `config.{env}.yaml` in the working
//! directory (`env` from `MIROBODY_ENV`, default `localdb`, the seed's
//! `config.localdb.yaml`), with the process environment winning over the file.
//! A missing file is fine; an unreadable or malformed one stops start-up.

use std::collections::BTreeMap;

use mirobody::ConfigError;

pub fn vars() -> Result<Vec<(String, String)>, ConfigError> {
    let env = std::env::var("MIROBODY_ENV").unwrap_or_else(|_| "localdb".into());
    let path = format!("config.{env}.yaml");
    let mut merged: BTreeMap<String, String> = match std::fs::read_to_string(&path) {
        Ok(text) => parse(&text).map_err(|problem| ConfigError {
            setting: path.clone(),
            problem,
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
        Err(e) => {
            return Err(ConfigError {
                setting: path,
                problem: e.to_string(),
            });
        }
    };
    merged.extend(std::env::vars());
    Ok(merged.into_iter().collect())
}

/// A flat mapping of setting names to scalars.
fn parse(text: &str) -> Result<BTreeMap<String, String>, String> {
    let doc: Option<BTreeMap<String, serde_norway::Value>> =
        serde_norway::from_str(text).map_err(|e| e.to_string())?;
    doc.unwrap_or_default()
        .into_iter()
        .map(|(key, value)| {
            let value = match value {
                serde_norway::Value::String(s) => s,
                serde_norway::Value::Number(n) => n.to_string(),
                serde_norway::Value::Bool(b) => b.to_string(),
                serde_norway::Value::Null => String::new(),
                serde_norway::Value::Sequence(items) => items
                    .iter()
                    .filter_map(|i| {
                        i.as_str()
                            .map(String::from)
                            .or_else(|| i.as_i64().map(|n| n.to_string()))
                    })
                    .collect::<Vec<_>>()
                    .join(","),
                _ => return Err(format!("{key} must be a scalar or a list")),
            };
            Ok((key, value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_config_file_shape_reads() {
        let vars = parse("MCP_PUBLIC_URL: 'https://yourdomain.com'\nHTTP_PORT: 18061\nMCP_RESOURCE_DIRS: [a, b]\n").unwrap();
        assert_eq!(vars["MCP_PUBLIC_URL"], "https://yourdomain.com");
        assert_eq!(vars["HTTP_PORT"], "18061");
        assert_eq!(vars["MCP_RESOURCE_DIRS"], "a,b");
        assert!(parse("- just\n- a list\n").is_err());
    }
}
