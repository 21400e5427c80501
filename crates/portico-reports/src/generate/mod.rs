//! Producing a task's files. Each generator is a plain function from the
//! agreement's data to bytes (no I/O), run on a blocking thread by the
//! worker.

pub mod broker;
pub mod cash;
pub mod holdings;
pub mod pdf;
pub mod period;
pub mod qes;
pub mod statement_1c;
pub mod xlsx;

use portico_model::reports::brokerage::Agreement;
use portico_model::reports::{FileType, ReportTask, ReportType, SignatureType};
use time::OffsetDateTime;

/// What generators take besides the data.
#[derive(Debug, Clone)]
pub struct Assets {
    /// The broker's facsimile signature and stamp (PNG), for `FACSIMILE`.
    pub facsimile_png: Vec<u8>,
    /// The broker's signing certificate and key, for `QES`.
    pub signer: Option<std::sync::Arc<qes::Signer>>,
    /// The broker's details and time zone.
    pub broker: broker::Broker,
}

/// The demo facsimile built into Portico (`assets/facsimile.png`).
pub const DEMO_FACSIMILE: &[u8] = include_bytes!("../../assets/facsimile.png");

impl Default for Assets {
    fn default() -> Self {
        Self { facsimile_png: DEMO_FACSIMILE.to_vec(), signer: None, broker: broker::Broker::default() }
    }
}

/// The title block's line on a `QES` form signed with the demo's
/// self-signed certificate.
pub const DEMONSTRATION_NOTICE: &str = "Демонстрационная подпись: сертификат самоподписанный, \
     выдан не аккредитованным удостоверяющим центром; юридической силы не имеет";

/// One produced file.
#[derive(Debug)]
pub struct Produced {
    pub file_name: String,
    pub content_type: &'static str,
    pub signature_type: SignatureType,
    pub content: Vec<u8>,
}

/// Why a file could not be produced; recorded as the task's `FAILED` reason.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("the task names no account of the agreement")]
    NoAccount,
    #[error("{0} files of {1} are not produced by this version of Portico")]
    Unsupported(&'static str, &'static str),
    #[error("{0}")]
    Data(String),
}

/// The files of `file_type` for `task`, made at `now`: one, or for `QES`
/// the printed form and its detached signature.
///
/// # Errors
/// When the data does not allow it or the type is not produced.
pub fn produce(
    task: &ReportTask,
    agreement: &Agreement,
    file_type: FileType,
    assets: &Assets,
    now: OffsetDateTime,
) -> Result<Vec<Produced>, GenerateError> {
    let (from, to) = (task.period_from, task.period_to);
    if task.report_type == ReportType::StatementFor1c {
        if file_type != FileType::SimpleDocumentary {
            return Err(GenerateError::Unsupported(file_type.as_str(), task.report_type.as_str()));
        }
        let number = task.account.as_deref().ok_or(GenerateError::NoAccount)?;
        let account = agreement.account(number).ok_or(GenerateError::NoAccount)?;
        let name = format!("Выписка_{}_{}_{}.txt", account.number, crate::views::date(from), crate::views::date(to));
        return Ok(vec![Produced {
            file_name: name,
            content_type: "text/plain; charset=windows-1251",
            signature_type: SignatureType::None,
            content: statement_1c::render(agreement, account, from, to, assets.broker.local(now))?,
        }]);
    }
    let period = period::Period::new(agreement, &assets.broker, task.account.as_deref(), from, to);
    let pdf_name = brokerage_name(task, "pdf");
    let pdf = |name: String, signature_type, content| Produced {
        file_name: name,
        content_type: "application/pdf",
        signature_type,
        content,
    };
    Ok(match file_type {
        FileType::SimpleDocumentary => vec![Produced {
            file_name: brokerage_name(task, "xlsx"),
            content_type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            signature_type: SignatureType::None,
            content: xlsx::render(&period, now)?,
        }],
        FileType::PrintedForm => vec![pdf(pdf_name, SignatureType::None, pdf::render(&period, now, None)?)],
        FileType::Facsimile => {
            // 320 × 150 px at about 140 dpi.
            let stamp = pdf::Stamp { png: &assets.facsimile_png, width: 165.0, height: 77.0 };
            let name = pdf_name.replace(".pdf", "_факсимиле.pdf");
            vec![pdf(name, SignatureType::Facsimile, pdf::render(&period, now, Some(&stamp))?)]
        }
        FileType::Qes => {
            let signer = assets.signer.as_ref().ok_or_else(|| {
                GenerateError::Data("no signing certificate is configured (reports.signing_cert)".into())
            })?;
            let notice = signer.is_demonstration().then_some(DEMONSTRATION_NOTICE);
            let form = pdf::render_with_notice(&period, now, None, notice)?;
            let signature = signer.sign_detached(&form, now)?;
            let name = pdf_name.replace(".pdf", "_КЭП.pdf");
            vec![
                pdf(name.clone(), SignatureType::Qes, form),
                Produced {
                    file_name: format!("{name}.sig"),
                    content_type: "application/pkcs7-signature",
                    signature_type: SignatureType::Qes,
                    content: signature,
                },
            ]
        }
    })
}

/// `Брокерский_отчёт_<agreement>_<from>_<to>.<extension>`.
fn brokerage_name(task: &ReportTask, extension: &str) -> String {
    let agreement: String =
        task.agreement_number.chars().map(|c| if c.is_alphanumeric() || c == '-' { c } else { '_' }).collect();
    format!(
        "Брокерский_отчёт_{agreement}_{}_{}.{extension}",
        crate::views::date(task.period_from),
        crate::views::date(task.period_to)
    )
}
