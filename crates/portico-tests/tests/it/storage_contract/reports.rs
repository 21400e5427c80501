//! Report tasks and brokerage agreements.

use super::*;

pub(crate) fn report_task(id: u128, cnum: &str, period: (u8, u8)) -> portico_model::reports::ReportTask {
    use portico_model::reports::{FileType, ReportTask, ReportType, Source, TaskStatus};
    use time::{Date, Month};
    ReportTask {
        id: Uuid::from_u128(id).into(),
        cnum: cnum.into(),
        report_type: ReportType::BrokerageReport,
        agreement_number: "БД-1".into(),
        account: None,
        period_from: Date::from_calendar_date(2026, Month::January, period.0).unwrap(),
        period_to: Date::from_calendar_date(2026, Month::March, period.1).unwrap(),
        handle_if_exists: false,
        file_types: vec![FileType::SimpleDocumentary, FileType::PrintedForm],
        status: TaskStatus::New,
        source: Source::PublicApiGateway,
        error: None,
        created_by: Some(Uuid::from_u128(99)),
        attempts: 0,
        lease_until: None,
        created_at: t0() + Duration::seconds(i64::try_from(id).unwrap()),
        updated_at: t0() + Duration::seconds(i64::try_from(id).unwrap()),
        files: Vec::new(),
        trace_parent: None,
    }
}

/// An operator's retry of a failed task is answered by a task for the
/// same request made since the failed one (an earlier retry), never by one
/// made before it.
#[tokio::test]
async fn a_retry_reuses_only_a_task_made_since_the_failed_one() {
    use portico_model::reports::TaskStatus;
    use portico_storage::Reuse;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let before = report_task(1, "7700000001", (1, 31));
        store.create_report_task(&before, Reuse::Never).await.unwrap();
        let mut failed = report_task(2, "7700000001", (1, 31));
        failed.status = TaskStatus::Failed;
        store.create_report_task(&failed, Reuse::Never).await.unwrap();
        let since = Reuse::SameRequestSince(failed.created_at);
        let retry = report_task(3, "7700000001", (1, 31));
        let (made, created) = store.create_report_task(&retry, since).await.unwrap();
        assert_eq!(
            (made.id, created),
            (retry.id, true),
            "{backend:?}: the task made before the failed one does not answer"
        );
        let (found, created) = store.create_report_task(&report_task(4, "7700000001", (1, 31)), since).await.unwrap();
        assert_eq!((found.id, created), (retry.id, false), "{backend:?}: the retry answers a second one");
    }
}

#[tokio::test]
async fn report_tasks_are_reused_listed_claimed_once_and_finished_under_their_lease() {
    use portico_model::reports::{FileType, ReportFile, SignatureType, TaskOutcome, TaskStatus};
    use portico_storage::ReportTaskFilter;
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        let first = report_task(1, "7700000001", (1, 31));
        assert_eq!(
            store.create_report_task(&first, portico_storage::Reuse::SameRequest).await.unwrap(),
            (first.clone(), true),
            "{backend:?}"
        );
        let again = report_task(2, "7700000001", (1, 31));
        let (found, created) = store.create_report_task(&again, portico_storage::Reuse::SameRequest).await.unwrap();
        assert_eq!((found.id, created), (first.id, false), "the earlier task is returned");
        let (_, created) = store.create_report_task(&again, portico_storage::Reuse::Never).await.unwrap();
        assert!(created, "handleIfExists: a new task");
        store.create_report_task(&report_task(3, "7700000001", (2, 28)), portico_storage::Reuse::Never).await.unwrap();
        store.create_report_task(&report_task(4, "7700000002", (1, 31)), portico_storage::Reuse::Never).await.unwrap();

        let list = |filter: ReportTaskFilter| {
            let store = Arc::clone(&store);
            async move {
                store
                    .list_report_tasks(&filter)
                    .await
                    .unwrap()
                    .iter()
                    .map(|t| t.id.as_uuid().as_u128())
                    .collect::<Vec<_>>()
            }
        };
        let mine = ReportTaskFilter { cnums: vec!["7700000001".into()], limit: 10, ..Default::default() };
        assert_eq!(list(mine.clone()).await, [3, 2, 1], "newest first, one company");
        assert_eq!(list(ReportTaskFilter { limit: 10, ..Default::default() }).await, Vec::<u128>::new());
        let from = Some(time::Date::from_calendar_date(2026, time::Month::January, 2).unwrap());
        assert_eq!(list(ReportTaskFilter { from, ..mine.clone() }).await, [3]);
        assert_eq!(list(ReportTaskFilter { offset: 1, limit: 1, ..mine.clone() }).await, [2]);
        let both = ReportTaskFilter { cnums: vec!["7700000001".into(), "7700000002".into()], ..mine.clone() };
        assert_eq!(list(both).await, [4, 3, 2, 1]);

        // Two workers at once never take the same task; a dead worker's
        // task returns when its lease runs out.
        let lease = t0() + Duration::seconds(300);
        let (a, b) = tokio::join!(store.claim_report_task(t0(), lease), store.claim_report_task(t0(), lease));
        let (a, b) = (a.unwrap().expect("a claimed"), b.unwrap().expect("b claimed"));
        assert_ne!(a.id, b.id, "{backend:?}");
        assert_eq!((a.status, a.attempts, a.lease_until), (TaskStatus::InProgress, 1, Some(lease)));
        let later = lease + Duration::seconds(1);
        let mut reclaimed = Vec::new();
        while let Some(task) = store.claim_report_task(later, later + Duration::seconds(300)).await.unwrap() {
            reclaimed.push(task);
        }
        assert_eq!(reclaimed.len(), 4, "two new, two whose lease ran out");
        let retaken = reclaimed.iter().find(|t| t.id == a.id).unwrap();
        assert_eq!(retaken.attempts, 2);

        let file = ReportFile {
            id: Uuid::from_u128(500).into(),
            task_id: a.id,
            file_type: FileType::SimpleDocumentary,
            name_rus: "Отчёт".into(),
            name_eng: "Report".into(),
            file_name: "report.xlsx".into(),
            signature_type: SignatureType::None,
            content_type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet".into(),
            size: 1234,
            object_key: "reports/a/report.xlsx".into(),
        };
        let done = TaskOutcome::Done(vec![file.clone()]);
        assert!(!store.finish_report_task(a.id, lease, &done, later).await.unwrap(), "the old lease is not the holder");
        assert!(store.finish_report_task(a.id, retaken.lease_until.unwrap(), &done, later).await.unwrap());
        let finished = store.find_report_task(a.id).await.unwrap().unwrap();
        assert_eq!((finished.status, finished.files.clone()), (TaskStatus::Done, vec![file.clone()]));
        assert_eq!(store.find_report_file(file.id).await.unwrap(), Some((file, a.cnum.clone())));
        let failed = TaskOutcome::Failed("no data".into());
        let other = reclaimed.iter().find(|t| t.id != a.id).unwrap();
        assert!(store.finish_report_task(other.id, other.lease_until.unwrap(), &failed, later).await.unwrap());
        let other = store.find_report_task(other.id).await.unwrap().unwrap();
        assert_eq!((other.status, other.error.as_deref()), (TaskStatus::Failed, Some("no data")));
    }
}

/// Retention's two methods: only tasks that finished (`DONE`, `FAILED`)
/// before the cut-off are listed, oldest first, and removed with their
/// files' rows; `NEW` and `IN_PROGRESS` tasks stay whatever their age.
#[tokio::test]
async fn finished_report_tasks_are_listed_and_removed_by_age_and_unfinished_ones_never() {
    use portico_model::reports::{FileType, ReportFile, SignatureType, TaskOutcome, TaskStatus};
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        for id in 1..=4 {
            store
                .create_report_task(&report_task(id, "7700000001", (1, 31)), portico_storage::Reuse::Never)
                .await
                .unwrap();
        }
        // 1 and 2 finish at t0 + 1 h (done with a file, failed); 3 is in
        // progress; 4 stays new.
        let finished_at = t0() + Duration::hours(1);
        let lease = t0() + Duration::hours(2);
        let mut claimed = Vec::new();
        for _ in 0..3 {
            claimed.push(store.claim_report_task(t0(), lease).await.unwrap().expect("a task"));
        }
        claimed.sort_by_key(|t| t.id);
        let file = ReportFile {
            id: Uuid::from_u128(600).into(),
            task_id: claimed[0].id,
            file_type: FileType::SimpleDocumentary,
            name_rus: "Отчёт".into(),
            name_eng: "Report".into(),
            file_name: "report.xlsx".into(),
            signature_type: SignatureType::None,
            content_type: "application/octet-stream".into(),
            size: 10,
            object_key: "reports/1/report.xlsx".into(),
        };
        let done = TaskOutcome::Done(vec![file.clone()]);
        assert!(store.finish_report_task(claimed[0].id, lease, &done, finished_at).await.unwrap());
        let failed = TaskOutcome::Failed("no data".into());
        assert!(store.finish_report_task(claimed[1].id, lease, &failed, finished_at).await.unwrap());

        let ids = |tasks: Vec<portico_model::reports::ReportTask>| {
            tasks.iter().map(|t| t.id.as_uuid().as_u128()).collect::<Vec<_>>()
        };
        let far = t0() + Duration::days(400);
        assert_eq!(
            ids(store.list_finished_report_tasks(finished_at, 10).await.unwrap()),
            Vec::<u128>::new(),
            "{backend:?}"
        );
        let expired = store.list_finished_report_tasks(far, 10).await.unwrap();
        assert_eq!(ids(expired.clone()), [1, 2], "{backend:?}: finished ones only, oldest first");
        assert_eq!(expired[0].files, vec![file.clone()], "with their files");
        assert_eq!(ids(store.list_finished_report_tasks(far, 1).await.unwrap()), [1], "at most the limit");

        assert!(!store.delete_finished_report_task(claimed[0].id, finished_at).await.unwrap(), "not yet past");
        for task in &claimed {
            let removed = store.delete_finished_report_task(task.id, far).await.unwrap();
            assert_eq!(removed, task.id.as_uuid().as_u128() != 3, "{backend:?}: task {}", task.id);
        }
        assert!(!store.delete_finished_report_task(Uuid::from_u128(4).into(), far).await.unwrap(), "a new task stays");
        assert_eq!(store.find_report_task(claimed[0].id).await.unwrap(), None);
        assert_eq!(store.find_report_file(file.id).await.unwrap(), None, "its files' rows go with it");
        let left = store.find_report_task(claimed[2].id).await.unwrap().expect("in progress stays");
        assert_eq!(left.status, TaskStatus::InProgress);
        assert_eq!(
            store.find_report_task(Uuid::from_u128(4).into()).await.unwrap().map(|t| t.status),
            Some(TaskStatus::New)
        );
        assert!(!store.delete_finished_report_task(claimed[0].id, far).await.unwrap(), "twice is harmless");
    }
}

#[tokio::test]
async fn agreements_are_replaced_whole_and_listed_by_number() {
    use portico_reports::sample::{Shape, agreement};
    for backend in backends() {
        let dir = TempDir::new();
        let store = store(backend, &dir).await;
        assert_eq!(store.list_agreements(portico_storage::KeyPage::ALL).await.unwrap(), Vec::<(String, String)>::new());
        let first = agreement(&Shape { number: "БД-2", cnum: "7700000002", trades: 20, ..Shape::demo() });
        let second = agreement(&Shape { number: "БД-1", cnum: "7700000001", trades: 5, ..Shape::demo() });
        store.save_agreements(&[first.clone(), second.clone()], t0()).await.unwrap();
        assert_eq!(
            store.list_agreements(portico_storage::KeyPage::ALL).await.unwrap(),
            [("БД-1".to_owned(), "7700000001".to_owned()), ("БД-2".to_owned(), "7700000002".to_owned())],
            "{backend:?}: by number"
        );
        assert_eq!(store.find_agreement("БД-2").await.unwrap(), Some(first.clone()));

        // Saving again replaces the agreement whole: nothing of the old
        // document survives beside the new one.
        let mut replaced = first.clone();
        replaced.trades.truncate(3);
        replaced.client_name = "АО «Новое имя»".into();
        store.save_agreements(&[replaced.clone()], t0() + Duration::days(1)).await.unwrap();
        assert_eq!(store.find_agreement("БД-2").await.unwrap(), Some(replaced));
        assert_eq!(store.find_agreement("БД-1").await.unwrap(), Some(second));
        assert_eq!(store.list_agreements(portico_storage::KeyPage::ALL).await.unwrap().len(), 2);
        assert_eq!(store.find_agreement("БД-3").await.unwrap(), None);
    }
}
