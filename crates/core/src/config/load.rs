//! Reading the settings: the defaults, then the optional file, then the environment, in two
//! passes (the shared sections, then the daemon's), and what the sources held that this binary
//! does not read.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use super::{
    ConfigError, DAEMON_SECTIONS, DaemonSection, ENV_PREFIX, ENV_SEPARATOR, SHARED_SECTIONS,
    Settings, env_name,
};

/// What [`load`] read.
#[derive(Debug, Clone)]
pub struct Loaded<D> {
    pub settings: Settings<D>,
    /// Names (`section.name`) in the sections this binary reads that it does not know: typos,
    /// or settings of a newer version (the [`NotRead::UnknownSetting`]s of `not_read`).
    pub ignored: Vec<String>,
    /// Everything in the sources that this binary does not read, in name order: unknown names
    /// in its sections (with the closest known one), other daemons' sections, and sections no
    /// daemon has. Each daemon logs them at start-up.
    pub not_read: Vec<NotRead>,
}

impl<D> Loaded<D> {
    /// The unknown names of [`Loaded::not_read`] outside the shared sections (for a tool that
    /// loaded those already and reported what it did not read there).
    pub fn ignored_in_daemon_sections(&self) -> impl Iterator<Item = &NotRead> {
        self.not_read.iter().filter(|n| match n {
            NotRead::UnknownSetting { setting, .. } => !SHARED_SECTIONS
                .iter()
                .any(|s| setting.split('.').next() == Some(s)),
            _ => false,
        })
    }
}

/// Something in the settings file or the environment that a binary does not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotRead {
    /// A name in a section the binary reads that it does not know: a typo, or a setting of a
    /// newer version still there after a rollback. `closest`: the nearest name it knows, if
    /// one is near enough to be the one meant.
    UnknownSetting {
        setting: String,
        closest: Option<String>,
    },
    /// Another daemon's section (see [`DAEMON_SECTIONS`]): read by `daemon`, not by this one.
    OtherDaemonsSection {
        section: String,
        daemon: &'static str,
    },
    /// A section no daemon has, with the nearest section name that exists.
    UnknownSection {
        section: String,
        closest: Option<String>,
    },
}

impl NotRead {
    /// The start-up log line for it, naming `binary` (the one that ignores it).
    pub fn message(&self, binary: &str) -> String {
        match self {
            NotRead::UnknownSetting { setting, closest } => {
                let env = env_name(setting);
                match closest {
                    Some(c) => format!(
                        "unknown setting {setting} ({env}) ignored: did you mean {c} ({})?",
                        env_name(c)
                    ),
                    None => format!(
                        "unknown setting {setting} ({env}) ignored: {binary} has no such setting (a typo, or a setting of a newer version)"
                    ),
                }
            }
            NotRead::OtherDaemonsSection { section, daemon } => {
                format!("{section}.* is {daemon}'s section: ignored by {binary}")
            }
            NotRead::UnknownSection { section, closest } => match closest {
                Some(c) => format!(
                    "unknown section {section} ignored: did you mean {c}? (LEDGERBOARD__{}__…)",
                    c.to_uppercase()
                ),
                None => format!(
                    "unknown section {section} ignored: no ledgerboard binary has it (a typo, or a section of a newer version)"
                ),
            },
        }
    }

    /// Whether it may be a mistake (logged as a warning), or only another daemon's section in
    /// a file or environment shared by all of them (logged as information, so that a shared
    /// ConfigMap does not warn at every start).
    pub fn is_warning(&self) -> bool {
        !matches!(self, NotRead::OtherDaemonsSection { .. })
    }

    /// The name it is about: `section.name`, or a section's name.
    pub fn name(&self) -> &str {
        match self {
            NotRead::UnknownSetting { setting, .. } => setting,
            NotRead::OtherDaemonsSection { section, .. }
            | NotRead::UnknownSection { section, .. } => section,
        }
    }
}

/// Loads the shared sections and `D` from the defaults, the optional file, and the process
/// environment.
pub fn load<D: DaemonSection>(file: Option<&Path>) -> Result<Loaded<D>, ConfigError> {
    load_from(file, None)
}

/// `(name, value)` pairs as the environment map [`load_from`] and [`read_from`] take.
pub fn env_map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Loads each `(environment name, value)` alone, over the defaults, into `D`'s settings and
/// checks that it is refused with an error naming `expected`: `Ok`, or one line per case that
/// was accepted or refused for another reason. The settings tests of every section use it.
pub fn check_refusals<D: DaemonSection>(cases: &[(&str, &str, &str)]) -> Result<(), String> {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|&(key, value, expected)| {
            match load_from::<D>(None, Some(env_map(&[(key, value)]))) {
                Ok(_) => Some(format!("{key}={value} was accepted")),
                Err(e) => {
                    let e = e.to_string();
                    (!e.contains(expected))
                        .then(|| format!("{key}={value}: {e:?} lacks {expected:?}"))
                }
            }
        })
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

/// As [`load`], with the environment given as a map instead of read from the process (tests
/// use this: the process environment is shared between threads).
pub fn load_from<D: DaemonSection>(
    file: Option<&Path>,
    env: Option<HashMap<String, String>>,
) -> Result<Loaded<D>, ConfigError> {
    let loaded = read_from::<D>(file, env)?;
    loaded.settings.validate()?;
    Ok(loaded)
}

/// As [`load_from`] without [`Settings::validate`]: for settings that are changed before they
/// are used (the test environments), which then validate them.
pub fn read_from<D: DaemonSection>(
    file: Option<&Path>,
    env: Option<HashMap<String, String>>,
) -> Result<Loaded<D>, ConfigError> {
    let defaults = Settings::<D>::default();
    let shared_defaults = config::Config::try_from(&defaults)?;
    let daemon_defaults = config::Config::try_from(&defaults.daemon)?;
    let mut builder = config::Config::builder()
        .add_source(shared_defaults.clone())
        .add_source(daemon_defaults.clone());
    if let Some(path) = file {
        builder = builder.add_source(
            config::File::from(path)
                .format(config::FileFormat::Toml)
                .required(true),
        );
    }
    builder = builder.add_source(
        config::Environment::with_prefix(ENV_PREFIX)
            .prefix_separator(ENV_SEPARATOR)
            .separator(ENV_SEPARATOR)
            .try_parsing(true)
            .source(env),
    );
    let merged = builder.build()?;
    // Two passes over the same sources: the shared sections, then the daemon's. Each type
    // reads only its own fields, so the other daemons' sections are never looked at.
    let mut settings: Settings<D> = merged.clone().try_deserialize()?;
    settings.daemon = merged.clone().try_deserialize()?;
    let mut known = names(shared_defaults)?;
    known.extend(names(daemon_defaults)?);
    let not_read = not_read(&known, &names(merged)?);
    let ignored = not_read
        .iter()
        .filter(|n| matches!(n, NotRead::UnknownSetting { .. }))
        .map(|n| n.name().to_owned())
        .collect();
    Ok(Loaded {
        settings,
        ignored,
        not_read,
    })
}

/// Section → the names set in it.
fn names(source: config::Config) -> Result<BTreeMap<String, BTreeSet<String>>, ConfigError> {
    let top: BTreeMap<String, config::Value> = source.try_deserialize()?;
    Ok(top
        .into_iter()
        .map(|(section, value)| {
            // A top-level value that is not a table is no section this binary reads.
            let keys = value
                .into_table()
                .map(|t| t.into_keys().collect())
                .unwrap_or_default();
            (section, keys)
        })
        .collect())
}

/// What `given` holds that `known` (the sections this binary reads) does not: names in a
/// known section that it does not have, with the closest known name, and whole sections,
/// another daemon's or no daemon's.
fn not_read(
    known: &BTreeMap<String, BTreeSet<String>>,
    given: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<NotRead> {
    let known_names: Vec<String> = known
        .iter()
        .flat_map(|(section, keys)| keys.iter().map(move |k| format!("{section}.{k}")))
        .collect();
    let mut out = Vec::new();
    for (section, keys) in given {
        match known.get(section) {
            Some(known_keys) => out.extend(keys.difference(known_keys).map(|key| {
                let setting = format!("{section}.{key}");
                NotRead::UnknownSetting {
                    closest: closest(&setting, &known_names).cloned(),
                    setting,
                }
            })),
            None => out.push(
                match DAEMON_SECTIONS.iter().find(|(name, _)| name == section) {
                    Some((_, daemon)) => NotRead::OtherDaemonsSection {
                        section: section.clone(),
                        daemon,
                    },
                    None => {
                        let sections = SHARED_SECTIONS
                            .iter()
                            .chain(DAEMON_SECTIONS.iter().map(|(name, _)| name));
                        NotRead::UnknownSection {
                            closest: closest(section, sections).map(|s| (*s).to_owned()),
                            section: section.clone(),
                        }
                    }
                },
            ),
        }
    }
    out
}

/// The candidate nearest to `name` by edit distance (a swap of two neighbouring letters
/// counts as one edit), if it is near enough to be the one meant: at most 2 edits, or a
/// quarter of the name's length for longer names. Ties go to the first candidate.
fn closest<'a, S: AsRef<str> + ?Sized + 'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a S>,
) -> Option<&'a S> {
    let limit = (name.chars().count() / 4).max(2);
    candidates
        .into_iter()
        .map(|c| (strsim::osa_distance(name, c.as_ref()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::env;
    use crate::config::{DatabaseSettings, LogFormat, SharedOnly};

    fn temp_file(contents: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("lb-config-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("tmp dir");
        let file = dir.join("ledgerboard.toml");
        std::fs::write(&file, contents).expect("write file");
        (dir, file)
    }

    #[test]
    fn environment_overrides_file_overrides_defaults() {
        let (dir, file) =
            temp_file("[redis]\nnamespace = \"from-file\"\n[log]\nfilter = \"debug\"\n");
        let s = load_from::<SharedOnly>(
            Some(&file),
            env(&[
                ("LEDGERBOARD__REDIS__NAMESPACE", "from-env"),
                ("LEDGERBOARD__DATABASE__POOL_MAX_SIZE", "7"),
                ("LEDGERBOARD__LOG__FORMAT", "json"),
            ]),
        )
        .expect("load")
        .settings;
        assert_eq!(s.redis.namespace, "from-env");
        assert_eq!(s.log.filter, "debug");
        assert_eq!(s.database.pool_max_size.get(), 7);
        assert_eq!(s.log.format, LogFormat::Json);
        assert_eq!(s.database.url, DatabaseSettings::default().url);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A rollback keeps the newer file: names this version does not know are reported, not
    /// refused, and sections of no daemon this binary runs are not read at all.
    #[test]
    fn unknown_names_are_ignored_and_reported() {
        let (dir, file) = temp_file(
            "[database]\nnew_knob = 3\n[projector]\nworkers = \"many\"\n[newsection]\nx = 1\n",
        );
        let loaded = load_from::<SharedOnly>(
            Some(&file),
            env(&[
                ("LEDGERBOARD__DATABASE__URLL", "x"),
                ("LEDGERBOARD__API__LISTEN", "nowhere"),
            ]),
        )
        .expect("unknown names do not stop a daemon");
        assert_eq!(loaded.settings, Settings::default());
        assert_eq!(loaded.ignored, ["database.new_knob", "database.urll"]);
        assert_eq!(
            loaded.not_read,
            [
                NotRead::OtherDaemonsSection {
                    section: "api".into(),
                    daemon: "ledgerboard-api",
                },
                NotRead::UnknownSetting {
                    setting: "database.new_knob".into(),
                    closest: None,
                },
                NotRead::UnknownSetting {
                    setting: "database.urll".into(),
                    closest: Some("database.url".into()),
                },
                NotRead::UnknownSection {
                    section: "newsection".into(),
                    closest: None,
                },
                NotRead::OtherDaemonsSection {
                    section: "projector".into(),
                    daemon: "ledgerboard-projector",
                },
            ]
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A typo is named with the setting meant, in the file or the environment; a name far
    /// from every known one gets no guess.
    #[test]
    fn unknown_names_come_with_the_closest_known_one() {
        let known = [
            "api.max_lag_ms",
            "api.listen",
            "database.url",
            "database.direct_url",
            "database.pool_max_size",
            "redis.pool_max_size",
        ];
        for (typo, meant) in [
            ("api.max_lag_m", Some("api.max_lag_ms")),
            ("api.max_lga_ms", Some("api.max_lag_ms")),
            ("api.lisen", Some("api.listen")),
            ("database.urll", Some("database.url")),
            ("database.directurl", Some("database.direct_url")),
            ("database.pool_size_max", None),
            ("api.new_knob", None),
            ("redis.pool_max_sizes", Some("redis.pool_max_size")),
        ] {
            assert_eq!(closest(typo, known), meant, "{typo}");
        }
        assert_eq!(
            closest("databse", SHARED_SECTIONS.iter()),
            Some(&"database")
        );
        assert_eq!(closest("reddis", SHARED_SECTIONS.iter()), Some(&"redis"));
        assert_eq!(closest("x", SHARED_SECTIONS.iter()), None);

        let loaded = load_from::<SharedOnly>(
            None,
            env(&[
                ("LEDGERBOARD__DATABASE__POOL_MAX_SIZ", "3"),
                ("LEDGERBOARD__DATABSE__URL", "postgres://elsewhere/x"),
            ]),
        )
        .expect("typos do not stop a daemon");
        let messages: Vec<String> = loaded.not_read.iter().map(|n| n.message("lbctl")).collect();
        assert_eq!(
            messages,
            [
                "unknown setting database.pool_max_siz (LEDGERBOARD__DATABASE__POOL_MAX_SIZ) ignored: did you mean database.pool_max_size (LEDGERBOARD__DATABASE__POOL_MAX_SIZE)?",
                "unknown section databse ignored: did you mean database? (LEDGERBOARD__DATABASE__…)",
            ]
        );
        assert!(loaded.not_read.iter().all(NotRead::is_warning));
        assert_eq!(
            NotRead::OtherDaemonsSection {
                section: "projector".into(),
                daemon: "ledgerboard-projector"
            }
            .message("ledgerboard-api"),
            "projector.* is ledgerboard-projector's section: ignored by ledgerboard-api"
        );
    }

    #[test]
    fn a_tool_reports_only_the_names_of_the_daemon_sections_it_adds() {
        let unknown = |setting: &str| NotRead::UnknownSetting {
            setting: setting.to_owned(),
            closest: None,
        };
        let loaded: Loaded<SharedOnly> = Loaded {
            settings: Settings::default(),
            ignored: vec!["database.urll".to_owned(), "reconciler.new_knob".to_owned()],
            not_read: vec![
                unknown("database.urll"),
                unknown("reconciler.new_knob"),
                NotRead::OtherDaemonsSection {
                    section: "api".into(),
                    daemon: "ledgerboard-api",
                },
            ],
        };
        assert_eq!(
            loaded.ignored_in_daemon_sections().collect::<Vec<_>>(),
            [&unknown("reconciler.new_knob")]
        );
    }
}
