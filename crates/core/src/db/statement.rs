//! How the store's statements reach PostgreSQL: prepared once per connection (the default),
//! or, behind a transaction pooler, as the unnamed statement.
//!
//! PgBouncer in `pool_mode = transaction` (Debian 12 ships 1.18, which does not track
//! prepared statements) hands each transaction whichever server connection is free. A named
//! statement prepared in one transaction is then missing in the next, or, worse, another
//! client's statement of the same name (tokio-postgres names them `s0`, `s1`, …) runs in its
//! place. The unnamed statement is parsed, bound and run in one round trip and never
//! outlives it. It costs a parse and a plan per call: pgbench running the command statement
//! that way reached half the prepared rate on the 2-core machine (docs/performance.md), so it
//! is only used when `database.transaction_pooler` is set.
//!
//! Every statement is a [`Statement`]: its SQL text (a file under `db/sql/`, declared next to
//! the function that runs it), the types its parameters are sent as, and the [`Op`] it is timed
//! under. [`Database::query`](super::Database::query) and its siblings run one on a pooled
//! connection within the round-trip bound; [`Statements::query`] and its siblings run one on a
//! connection or transaction the caller holds (the projector's batch, the retention pass).

use deadpool_postgres::{ClientWrapper, Object, Transaction};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Error, GenericClient, Row};

use super::metrics::{Op, timed};

/// The values of a statement's `N` parameters, in order; their types are the statement's.
pub type Params<'a, const N: usize> = [&'a (dyn ToSql + Sync); N];

/// One SQL statement of the store code and how it is sent.
#[derive(Debug)]
pub struct Statement<const N: usize> {
    op: Op,
    sql: &'static str,
    types: [Type; N],
    /// Always sent as the unnamed statement, whatever [`Statements`] says.
    unnamed: bool,
}

impl<const N: usize> Statement<N> {
    pub const fn new(op: Op, sql: &'static str, types: [Type; N]) -> Self {
        Self {
            op,
            sql,
            types,
            unnamed: false,
        }
    }

    /// Sent as the unnamed statement even when statements are prepared: for a statement that
    /// runs once (start-up) or whose every call is one round trip anyway.
    pub const fn unnamed(mut self) -> Self {
        self.unnamed = true;
        self
    }

    /// The label it is timed under.
    pub fn op(&self) -> Op {
        self.op
    }

    /// The SQL text (tests explain it, the benchmark hands it to pgbench).
    pub fn sql(&self) -> &'static str {
        self.sql
    }

    /// The types its parameters are sent as (a test prepares it with them to read its plan:
    /// PostgreSQL cannot infer them all from the text).
    pub fn types(&self) -> &[Type; N] {
        &self.types
    }

    fn typed<'a>(&self, params: Params<'a, N>) -> [(&'a (dyn ToSql + Sync), Type); N] {
        std::array::from_fn(|i| (params[i], self.types[i].clone()))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statements {
    /// Named, prepared once per pooled connection and cached; the default.
    Prepared,
    /// The unnamed statement in the same round trip: for transaction poolers.
    Unnamed,
}

/// A pooled connection or a transaction on one.
pub trait StatementClient: Sync {
    type Pg: GenericClient + Sync;
    fn pg(&self) -> &Self::Pg;
    fn cached(
        &self,
        sql: &str,
        types: &[Type],
    ) -> impl Future<Output = Result<tokio_postgres::Statement, Error>> + Send;
}

impl StatementClient for ClientWrapper {
    type Pg = tokio_postgres::Client;
    fn pg(&self) -> &Self::Pg {
        self
    }
    fn cached(
        &self,
        sql: &str,
        types: &[Type],
    ) -> impl Future<Output = Result<tokio_postgres::Statement, Error>> + Send {
        self.prepare_typed_cached(sql, types)
    }
}

impl StatementClient for Object {
    type Pg = tokio_postgres::Client;
    fn pg(&self) -> &Self::Pg {
        self
    }
    fn cached(
        &self,
        sql: &str,
        types: &[Type],
    ) -> impl Future<Output = Result<tokio_postgres::Statement, Error>> + Send {
        (**self).prepare_typed_cached(sql, types)
    }
}

impl<'t> StatementClient for Transaction<'t> {
    type Pg = tokio_postgres::Transaction<'t>;
    fn pg(&self) -> &Self::Pg {
        self
    }
    fn cached(
        &self,
        sql: &str,
        types: &[Type],
    ) -> impl Future<Output = Result<tokio_postgres::Statement, Error>> + Send {
        self.prepare_typed_cached(sql, types)
    }
}

/// Commits `tx`, timed under [`Op::Commit`].
pub async fn commit(tx: Transaction<'_>) -> Result<(), Error> {
    timed(Op::Commit, tx.commit()).await
}

impl Statements {
    pub fn for_pooler(transaction_pooler: bool) -> Self {
        if transaction_pooler {
            Self::Unnamed
        } else {
            Self::Prepared
        }
    }

    fn for_statement<const N: usize>(self, s: &Statement<N>) -> Self {
        if s.unnamed { Self::Unnamed } else { self }
    }

    /// Runs `s` on `c` and times it under its op. No time bound: the caller bounds the
    /// connection or transaction it holds.
    pub async fn query<const N: usize>(
        self,
        c: &impl StatementClient,
        s: &Statement<N>,
        params: Params<'_, N>,
    ) -> Result<Vec<Row>, Error> {
        timed(s.op, self.query_untimed(c, s, params)).await
    }

    /// As [`Self::query`], for exactly one row.
    pub async fn query_one<const N: usize>(
        self,
        c: &impl StatementClient,
        s: &Statement<N>,
        params: Params<'_, N>,
    ) -> Result<Row, Error> {
        timed(s.op, self.query_one_untimed(c, s, params)).await
    }

    /// As [`Self::query`], for the number of rows changed.
    pub async fn execute<const N: usize>(
        self,
        c: &impl StatementClient,
        s: &Statement<N>,
        params: Params<'_, N>,
    ) -> Result<u64, Error> {
        timed(s.op, self.execute_untimed(c, s, params)).await
    }

    // The untimed forms run inside `Database::bounded`, which times the round trip itself
    // (one call may pipeline two statements under one op, as `read_around` does).

    pub(crate) async fn query_untimed<const N: usize>(
        self,
        c: &impl StatementClient,
        s: &Statement<N>,
        params: Params<'_, N>,
    ) -> Result<Vec<Row>, Error> {
        match self.for_statement(s) {
            Self::Prepared => {
                let stmt = c.cached(s.sql, &s.types).await?;
                c.pg().query(&stmt, &params).await
            }
            Self::Unnamed => c.pg().query_typed(s.sql, &s.typed(params)).await,
        }
    }

    pub(crate) async fn query_one_untimed<const N: usize>(
        self,
        c: &impl StatementClient,
        s: &Statement<N>,
        params: Params<'_, N>,
    ) -> Result<Row, Error> {
        match self.for_statement(s) {
            Self::Prepared => {
                let stmt = c.cached(s.sql, &s.types).await?;
                c.pg().query_one(&stmt, &params).await
            }
            Self::Unnamed => c.pg().query_typed_one(s.sql, &s.typed(params)).await,
        }
    }

    pub(crate) async fn query_opt_untimed<const N: usize>(
        self,
        c: &impl StatementClient,
        s: &Statement<N>,
        params: Params<'_, N>,
    ) -> Result<Option<Row>, Error> {
        match self.for_statement(s) {
            Self::Prepared => {
                let stmt = c.cached(s.sql, &s.types).await?;
                c.pg().query_opt(&stmt, &params).await
            }
            Self::Unnamed => c.pg().query_typed_opt(s.sql, &s.typed(params)).await,
        }
    }

    pub(crate) async fn execute_untimed<const N: usize>(
        self,
        c: &impl StatementClient,
        s: &Statement<N>,
        params: Params<'_, N>,
    ) -> Result<u64, Error> {
        match self.for_statement(s) {
            Self::Prepared => {
                let stmt = c.cached(s.sql, &s.types).await?;
                c.pg().execute(&stmt, &params).await
            }
            Self::Unnamed => c.pg().execute_typed(s.sql, &s.typed(params)).await,
        }
    }
}

/// A statement made ready ahead of a pipeline ([`Statements::ready`]): each run of it is sent
/// to PostgreSQL the moment its future is first polled, with no prepare round trip in
/// between, so runs polled in order reach the server in that order.
pub enum Ready<'s, const N: usize> {
    Prepared(tokio_postgres::Statement),
    Unnamed(&'s Statement<N>),
}

impl Statements {
    /// Prepares `s` on `c` (from the connection's cache when it was prepared before) or, behind
    /// a transaction pooler, keeps it to be sent as the unnamed statement.
    pub async fn ready<'s, const N: usize>(
        self,
        c: &impl StatementClient,
        s: &'s Statement<N>,
    ) -> Result<Ready<'s, N>, Error> {
        match self.for_statement(s) {
            Self::Prepared => Ok(Ready::Prepared(c.cached(s.sql, &s.types).await?)),
            Self::Unnamed => Ok(Ready::Unnamed(s)),
        }
    }
}

impl<const N: usize> Ready<'_, N> {
    /// One run, for exactly one row. Untimed: the pipeline it belongs to is timed as a whole.
    pub async fn query_one(
        &self,
        c: &impl StatementClient,
        params: Params<'_, N>,
    ) -> Result<Row, Error> {
        match self {
            Ready::Prepared(stmt) => c.pg().query_one(stmt, &params).await,
            Ready::Unnamed(s) => c.pg().query_typed_one(s.sql, &s.typed(params)).await,
        }
    }
}
