mod bulk;
mod corrective;
mod create;
mod get;
mod issue;
mod list;
mod numbering;
