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

use deadpool_postgres::{ClientWrapper, Object, Transaction};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Error, GenericClient, Row, Statement};

/// A parameter and the type it is sent as.
pub type Param<'a> = (&'a (dyn ToSql + Sync), Type);

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
    ) -> impl Future<Output = Result<Statement, Error>> + Send;
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
    ) -> impl Future<Output = Result<Statement, Error>> + Send {
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
    ) -> impl Future<Output = Result<Statement, Error>> + Send {
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
    ) -> impl Future<Output = Result<Statement, Error>> + Send {
        self.prepare_typed_cached(sql, types)
    }
}

fn types(params: &[Param<'_>]) -> Vec<Type> {
    params.iter().map(|(_, t)| t.clone()).collect()
}

fn values<'a>(params: &'a [Param<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    params.iter().map(|(v, _)| *v).collect()
}

impl Statements {
    pub fn for_pooler(transaction_pooler: bool) -> Self {
        if transaction_pooler {
            Self::Unnamed
        } else {
            Self::Prepared
        }
    }

    pub async fn query(
        self,
        c: &impl StatementClient,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Vec<Row>, Error> {
        match self {
            Self::Prepared => {
                let stmt = c.cached(sql, &types(params)).await?;
                c.pg().query(&stmt, &values(params)).await
            }
            Self::Unnamed => c.pg().query_typed(sql, params).await,
        }
    }

    pub async fn query_one(
        self,
        c: &impl StatementClient,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Row, Error> {
        match self {
            Self::Prepared => {
                let stmt = c.cached(sql, &types(params)).await?;
                c.pg().query_one(&stmt, &values(params)).await
            }
            Self::Unnamed => c.pg().query_typed_one(sql, params).await,
        }
    }

    pub async fn query_opt(
        self,
        c: &impl StatementClient,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Option<Row>, Error> {
        match self {
            Self::Prepared => {
                let stmt = c.cached(sql, &types(params)).await?;
                c.pg().query_opt(&stmt, &values(params)).await
            }
            Self::Unnamed => c.pg().query_typed_opt(sql, params).await,
        }
    }

    pub async fn execute(
        self,
        c: &impl StatementClient,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<u64, Error> {
        match self {
            Self::Prepared => {
                let stmt = c.cached(sql, &types(params)).await?;
                c.pg().execute(&stmt, &values(params)).await
            }
            Self::Unnamed => c.pg().execute_typed(sql, params).await,
        }
    }
}
