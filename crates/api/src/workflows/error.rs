//! The one error of the workflows, [`AppError`]: what went wrong in the terms of the
//! business (invalid input, not found, a conflict with the invoice's state, an action the
//! company must take first), with no HTTP in it. The API answers it in one place,
//! `impl From<AppError> for ApiError` in [`crate::error`].

/// Everything a workflow can fail with.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The input cannot be acted on as given; the text says what to fix.
    #[error("{0}")]
    Invalid(String),
    /// A resource of the caller's company that does not exist (another company's is the same).
    #[error("{0}")]
    NotFound(String),
    /// The resource's state forbids the action (an issued invoice edited, a lost race).
    #[error("{0}")]
    Conflict(String),
    /// The company or the caller must do something first (`code` names it).
    #[error("{message}")]
    Refused {
        code: &'static str,
        message: String,
        authorization_url: Option<String>,
    },
    /// The company has too much under way (mails waiting to be sent); the same action may
    /// succeed after `retry_after_secs`.
    #[error("{message}")]
    Busy {
        message: String,
        retry_after_secs: u64,
    },
    /// The database could not be reached; nothing happened and the action may be retried.
    #[error("service unavailable: {0}")]
    Unavailable(String),
    /// A bug or a broken stored value: logged, never shown.
    #[error("internal error: {0:#}")]
    Internal(anyhow::Error),
}

/// Result of a workflow.
pub type AppResult<T> = Result<T, AppError>;

impl AppError {
    /// Invalid input, with what to fix.
    pub fn invalid(msg: impl Into<String>) -> Self {
        Self::Invalid(msg.into())
    }

    /// `what` not found (of the caller's company).
    pub fn not_found(what: &str) -> Self {
        Self::NotFound(format!("{what} not found"))
    }

    /// The company has not completed its registration.
    pub fn company_not_settled() -> Self {
        Self::Refused {
            code: "company_not_settled",
            message: "Complete the company registration first (POST /v1/company/registration)."
                .into(),
            authorization_url: None,
        }
    }

    /// The user has not accepted the current legal documents.
    pub fn agreement_required() -> Self {
        Self::Refused {
            code: "agreement_required",
            message: "Accept the current legal documents first (GET /v1/agreements, then POST \
                      /v1/agreements/{id}/accept for each one not yet accepted)."
                .into(),
            authorization_url: None,
        }
    }

    fn connection_lost() -> Self {
        store::db::note_connection_error();
        Self::Unavailable("The database is not reachable at the moment; try again shortly.".into())
    }
}

impl From<sqlx::Error> for AppError {
    /// A lost or unobtainable database connection (the server restarted, the connection
    /// was killed, the pool is exhausted) is [`AppError::Unavailable`]: the action did not
    /// happen and may be tried again. Anything else is an internal error.
    fn from(e: sqlx::Error) -> Self {
        if store::db::is_connection_error(&e) {
            tracing::warn!(error = %e, "the database connection failed; answering 503");
            return Self::connection_lost();
        }
        Self::Internal(e.into())
    }
}

impl From<anyhow::Error> for AppError {
    fn from(e: anyhow::Error) -> Self {
        // A store error wrapping a lost connection is answered like the bare one.
        if let Some(sqlx) = e.downcast_ref::<sqlx::Error>()
            && store::db::is_connection_error(sqlx)
        {
            tracing::warn!(
                error = format!("{e:#}"),
                "the database connection failed; answering 503"
            );
            return Self::connection_lost();
        }
        Self::Internal(e)
    }
}
