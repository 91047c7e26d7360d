//! The Lua scripts in `lua/`, embedded at build time (nothing is read from disk at run time).

use std::sync::LazyLock;

use redis::Script;

/// `lua/project.lua`: applies one outbox row (absolute score + version) to a board.
pub static PROJECT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../../lua/project.lua")));
