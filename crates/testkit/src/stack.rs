//! The sections of the three daemons for a test or a tool that runs them side by side in one
//! process (the api, projector and reconciler tests, the benchmark): one copy, each daemon
//! handed its own part (`Holds`), all validated together.

use ledgerboard_api::settings::{ApiSettings, AuthSettings};
use ledgerboard_core::config::{self, ConfigError, DaemonSection, Holds};
use ledgerboard_projector::settings::ProjectorSettings;
use ledgerboard_reconciler::settings::ReconcilerSettings;

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Stack {
    pub api: ApiSettings,
    pub auth: AuthSettings,
    pub projector: ProjectorSettings,
    pub reconciler: ReconcilerSettings,
}

/// Every daemon's settings at once.
pub type StackSettings = config::Settings<Stack>;

impl DaemonSection for Stack {
    fn validate(settings: &StackSettings) -> Result<(), ConfigError> {
        settings
            .narrow::<ledgerboard_api::settings::Sections>()
            .validate()?;
        settings
            .narrow::<ledgerboard_projector::settings::Sections>()
            .validate()?;
        settings
            .narrow::<ledgerboard_reconciler::settings::Sections>()
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

impl Holds<ledgerboard_reconciler::settings::Sections> for Stack {
    fn section(&self) -> ledgerboard_reconciler::settings::Sections {
        ledgerboard_reconciler::settings::Sections {
            reconciler: self.reconciler.clone(),
        }
    }
}
