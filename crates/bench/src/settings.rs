//! The settings of the daemons the benchmarks run in this process: the api and the projector
//! (the reconciler runs as its own binary), each handed its own sections (`Holds`).

use ledgerboard_api::settings::{ApiSettings, AuthSettings};
use ledgerboard_core::config::{self, ConfigError, DaemonSection, Holds};
use ledgerboard_projector::settings::ProjectorSettings;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Stack {
    pub api: ApiSettings,
    pub auth: AuthSettings,
    pub projector: ProjectorSettings,
}

pub type Settings = config::Settings<Stack>;

impl DaemonSection for Stack {
    fn validate(settings: &Settings) -> Result<(), ConfigError> {
        settings
            .narrow::<ledgerboard_api::settings::Sections>()
            .validate()?;
        settings
            .narrow::<ledgerboard_projector::settings::Sections>()
            .validate()
    }
}

impl Holds<ledgerboard_api::settings::Sections> for Stack {
    fn section(&self) -> ledgerboard_api::settings::Sections {
        ledgerboard_api::settings::Sections {
            api: self.api.clone(),
            auth: self.auth.clone(),
        }
    }
}

impl Holds<ledgerboard_projector::settings::Sections> for Stack {
    fn section(&self) -> ledgerboard_projector::settings::Sections {
        ledgerboard_projector::settings::Sections {
            projector: self.projector.clone(),
        }
    }
}
