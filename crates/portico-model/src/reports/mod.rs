//! Brokerage reports (`spec/2-notifications-and-reports.md`, part B): the
//! report and file types, tasks and their files, and the brokerage data
//! they are made from ([`brokerage`]).

pub mod brokerage;

use time::{Date, OffsetDateTime};
use uuid::Uuid;

use crate::ids::{ReportFileId, ReportTaskId};

/// A closed set of codes: the enum, its code strings, JSON as the code, and
/// its OpenAPI schema (a string enum named `$schema`).
macro_rules! codes {
    ($(#[$meta:meta])* $name:ident as $schema:literal { $($variant:ident = $code:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $code),+ }
            }

            pub fn parse(text: &str) -> Option<Self> {
                match text { $($code => Some(Self::$variant),)+ _ => None }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .enum_values(Some([$($code),+]))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {
            fn name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed($schema)
            }
        }
    };
}

codes!(
    /// What a report is.
    ReportType as "ReportTypeCode" { StatementFor1c = "STATEMENT_FOR_1C", BrokerageReport = "BROKERAGE_REPORT" }
);
codes!(
    /// What form a report's file takes.
    FileType as "FileTypeCode" {
        SimpleDocumentary = "SIMPLE_DOCUMENTARY",
        PrintedForm = "PRINTED_FORM",
        Qes = "QES",
        Facsimile = "FACSIMILE",
    }
);
codes!(
    TaskStatus as "ReportTaskStatus" { New = "NEW", InProgress = "IN_PROGRESS", Failed = "FAILED", Done = "DONE" }
);
codes!(
    /// The channel a task was created through.
    Source as "ReportTaskSource" { OnlineBank = "ONLINE_BANK", PublicApiGateway = "PUBLIC_API_GATEWAY" }
);
codes!(
    SignatureType as "SignatureTypeCode" { None = "NONE", Qes = "QES", Facsimile = "FACSIMILE" }
);

impl ReportType {
    /// `desc` of the spec's `{type, desc}`.
    pub fn description(self) -> &'static str {
        match self {
            Self::StatementFor1c => "Выписка по счёту для 1С",
            Self::BrokerageReport => "Брокерский отчёт",
        }
    }

    /// Whether `account` is required (`isUseAccountParameter`).
    pub fn uses_account(self) -> bool {
        matches!(self, Self::StatementFor1c)
    }

    pub fn allowed_file_types(self) -> &'static [FileType] {
        match self {
            Self::StatementFor1c => &[FileType::SimpleDocumentary],
            Self::BrokerageReport => {
                &[FileType::SimpleDocumentary, FileType::PrintedForm, FileType::Facsimile, FileType::Qes]
            }
        }
    }

    pub fn default_file_types(self) -> &'static [FileType] {
        match self {
            Self::StatementFor1c => &[FileType::SimpleDocumentary],
            Self::BrokerageReport => &[FileType::SimpleDocumentary, FileType::PrintedForm],
        }
    }
}

impl FileType {
    /// `(nameRus, nameEng)` of the file type.
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            Self::SimpleDocumentary => ("Электронный документ", "Electronic document"),
            Self::PrintedForm => ("Печатная форма", "Printed form"),
            Self::Qes => (
                "Печатная форма с квалифицированной электронной подписью",
                "Printed form with a qualified electronic signature",
            ),
            Self::Facsimile => ("Печатная форма с факсимиле", "Printed form with a facsimile"),
        }
    }
}

impl SignatureType {
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            Self::None => ("Без подписи", "Not signed"),
            Self::Qes => ("Квалифицированная электронная подпись", "Qualified electronic signature"),
            Self::Facsimile => ("Факсимиле", "Facsimile"),
        }
    }
}

/// The longest period one task may cover, in days (a year and a day, so a
/// leap year fits).
pub const MAX_PERIOD_DAYS: i64 = 366;

/// A report task and its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportTask {
    pub id: ReportTaskId,
    /// The company the task belongs to.
    pub cnum: String,
    pub report_type: ReportType,
    pub agreement_number: String,
    pub account: Option<String>,
    pub period_from: Date,
    pub period_to: Date,
    pub handle_if_exists: bool,
    /// What to produce, in the order asked.
    pub file_types: Vec<FileType>,
    pub status: TaskStatus,
    pub source: Source,
    /// Why a `FAILED` task failed.
    pub error: Option<String>,
    /// The user who asked for it (none for tasks of the bank's own channels).
    pub created_by: Option<Uuid>,
    /// Generation attempts so far.
    pub attempts: u32,
    /// While `IN_PROGRESS`: until when its worker holds it.
    pub lease_until: Option<OffsetDateTime>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
    pub files: Vec<ReportFile>,
    /// The W3C `traceparent` of the request that asked for it, so that its
    /// generation continues that trace (OpenTelemetry).
    pub trace_parent: Option<String>,
}

/// A produced file, kept in the object store under `object_key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFile {
    pub id: ReportFileId,
    pub task_id: ReportTaskId,
    pub file_type: FileType,
    pub name_rus: String,
    pub name_eng: String,
    pub file_name: String,
    pub signature_type: SignatureType,
    pub content_type: String,
    pub size: u64,
    pub object_key: String,
}

/// How a worker's generation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskOutcome {
    Done(Vec<ReportFile>),
    Failed(String),
}
