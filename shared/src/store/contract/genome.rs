//! Contract cases for [`GenomeStore`](crate::store::GenomeStore): a genome replaced as
//! a whole, lookups by rsid, ranges and neighbourhoods, readers during a replacement,
//! and deleting it.
//!
//! Each case speaks only through the `Store` trait, so both backends run it unchanged.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::{genotype, put_genome, reading};
use crate::domain::{DataPresence, Genome, Genotype};
use crate::store::{GenomeSummary, Store};

fn positions(genotypes: &[Genotype]) -> Vec<u64> {
    genotypes.iter().map(|g| g.position).collect()
}

fn sorted_rsids(genotypes: &[Genotype]) -> Vec<String> {
    let mut rsids: Vec<String> = genotypes.iter().map(|g| g.rsid.clone()).collect();
    rsids.sort();
    rsids
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

pub(super) async fn genome_is_replaced_as_a_whole(store: &dyn Store, user: &str) {
    assert_eq!(store.genome_summary(user).await.unwrap(), None);
    put_genome(
        store,
        user,
        &[
            genotype("rs42", "7", 117_559_590, "AG"),
            genotype("i5000", "X", 5, "--"),
            genotype("rs007", "1", 9, "A"),
        ],
    )
    .await;
    let ask = strings(&["rs42", "rs999999", "i5000", "RS42", "rs007", "rs7"]);
    let mut found = store.genotypes_by_rsid(user, &ask).await.unwrap();
    found.sort_by(|a, b| a.rsid.cmp(&b.rsid));
    assert_eq!(
        found,
        vec![
            genotype("i5000", "X", 5, "--"),
            genotype("rs007", "1", 9, "A"),
            genotype("rs42", "7", 117_559_590, "AG"),
        ],
        "unknown rsids absent, asked ones once"
    );

    // A new file replaces the genome: no merge with the previous one.
    let genome = Genome::from_genotypes(&[
        genotype("rs42", "7", 117_559_590, "GG"),
        genotype("rs1", "2", 100, "CT"),
    ])
    .unwrap();
    store
        .replace_genome(user, &genome, "genome_v5.txt", 1_700_000_000)
        .await
        .unwrap();
    let mut found = store.genotypes_by_rsid(user, &ask).await.unwrap();
    found.sort_by(|a, b| a.rsid.cmp(&b.rsid));
    assert_eq!(found, vec![genotype("rs42", "7", 117_559_590, "GG")]);
    assert_eq!(
        store.genome_summary(user).await.unwrap(),
        Some(GenomeSummary {
            variants: 2,
            source: "genome_v5.txt".into(),
            imported_at: 1_700_000_000,
        })
    );
    assert!(
        store
            .genotypes_in_range(user, "X", 0, u64::MAX)
            .await
            .unwrap()
            .is_empty(),
        "the previous genome's variants are gone"
    );

    // Hostile input is data, never query text.
    let hostile = strings(&[
        "rs1' OR 1=1 --",
        "rs42\" OR \"1\"=\"1",
        "%",
        "*",
        "",
        "g#rs42",
        "rs42#",
        "gv#",
    ]);
    assert!(
        store
            .genotypes_by_rsid(user, &hostile)
            .await
            .unwrap()
            .is_empty(),
        "injection finds nothing"
    );
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence {
            health: false,
            genotype: true
        }
    );
}

pub(super) async fn genotype_ranges_ordered_and_confined(
    store: &dyn Store,
    user: &str,
    other: &str,
) {
    let mut data = vec![
        genotype("rs300", "1", 300, "CC"),
        genotype("rs100", "1", 100, "AA"),
        genotype("rs250", "1", 250, "AT"),
        genotype("rs200", "1", 200, "AG"),
        genotype("rs201", "1", 200, "AG"),
        genotype("rs1501", "11", 150, "GG"),
        genotype("rs1502", "X", 150, "TT"),
        genotype("rs1503", "10", 200, "TT"),
    ];
    put_genome(store, user, &data).await;
    put_genome(
        store,
        other,
        &[
            genotype("rs999", "1", 150, "CC"),
            genotype("rs250", "1", 250, "GG"),
        ],
    )
    .await;

    let got = store.genotypes_in_range(user, "1", 100, 250).await.unwrap();
    assert_eq!(
        positions(&got),
        [100, 200, 200, 250],
        "inclusive, ordered by position"
    );
    assert_eq!(got[1].rsid, "rs200", "then by rsid");
    assert!(got.iter().all(|g| g.chromosome == "1"));
    assert_eq!(
        got[3],
        genotype("rs250", "1", 250, "AT"),
        "the user's own call, not the other user's"
    );
    assert_eq!(
        positions(
            &store
                .genotypes_in_range(user, "1", 0, u64::MAX)
                .await
                .unwrap()
        ),
        [100, 200, 200, 250, 300]
    );
    assert!(
        store
            .genotypes_in_range(user, "1", 101, 199)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .genotypes_in_range(user, "1", 300, 100)
            .await
            .unwrap()
            .is_empty(),
        "from > to is empty"
    );
    assert_eq!(
        sorted_rsids(&store.genotypes_in_range(user, "11", 0, 1000).await.unwrap()),
        ["rs1501"]
    );
    for nothing in ["2", "XY", "chr1", ""] {
        assert!(
            store
                .genotypes_in_range(user, nothing, 0, u64::MAX)
                .await
                .unwrap()
                .is_empty(),
            "{nothing}"
        );
    }

    // A file with a SNP moved (new build coordinates) moves it in range queries too.
    data[1] = genotype("rs100", "1", 400, "AA");
    put_genome(store, user, &data).await;
    assert_eq!(
        positions(
            &store
                .genotypes_in_range(user, "1", 0, u64::MAX)
                .await
                .unwrap()
        ),
        [200, 200, 250, 300, 400]
    );
}

/// A lookup with neighbours finds every variant within the radius, across the
/// stores' internal boundaries (DynamoDB: 4 Mbp blocks), and nothing of another
/// chromosome.
pub(super) async fn neighbourhoods_cover_the_radius(store: &dyn Store, user: &str) {
    // Chromosome 1: a variant every 50 kbp up to 20 Mbp; chromosome 2 the same.
    let mut data = Vec::new();
    for chromosome in ["1", "2"] {
        for i in 0..400u64 {
            data.push(genotype(
                &format!("rs{chromosome}{i:04}"),
                chromosome,
                i * 50_000 + 7,
                "AG",
            ));
        }
    }
    put_genome(store, user, &data).await;
    // rs10083 sits at 4,150,007: just below a 4,194,304 boundary.
    let ask = strings(&["rs10083", "rs10300", "rs20001", "rs404"]);
    let radius = 1_000_000;
    let near = store.genotypes_near(user, &ask, radius).await.unwrap();
    assert_eq!(sorted_rsids(&near.hits), ["rs10083", "rs10300", "rs20001"]);
    for hit in &near.hits {
        let expected = store
            .genotypes_in_range(
                user,
                &hit.chromosome,
                hit.position.saturating_sub(radius),
                hit.position + radius,
            )
            .await
            .unwrap();
        let shown: Vec<&Genotype> = near
            .nearby
            .iter()
            .filter(|g| {
                g.chromosome == hit.chromosome && g.position.abs_diff(hit.position) <= radius
            })
            .collect();
        assert_eq!(shown, expected.iter().collect::<Vec<_>>(), "{hit:?}");
    }
    assert!(
        near.nearby
            .windows(2)
            .all(|w| (w[0].chromosome.as_str(), w[0].position)
                < (w[1].chromosome.as_str(), w[1].position)),
        "ordered by chromosome, then position"
    );
    let empty = store.genotypes_near(user, &ask[3..], radius).await.unwrap();
    assert!(empty.hits.is_empty() && empty.nearby.is_empty());
    let alone = store.genotypes_near(user, &ask[..1], 0).await.unwrap();
    assert_eq!(sorted_rsids(&alone.hits), ["rs10083"]);
}

/// Readers running while a large genome is replaced see the old genome, complete,
/// or the new one, complete: never a mix, never nothing.
pub(super) async fn readers_never_see_a_mix_during_a_replacement(store: &dyn Store, user: &str) {
    const PER_CHROMOSOME: u64 = 25_000;
    let genome = |call: &str| {
        let rows: Vec<Genotype> = ["1", "2"]
            .iter()
            .enumerate()
            .flat_map(|(c, chromosome)| {
                (0..PER_CHROMOSOME).map(move |i| {
                    genotype(
                        &format!("rs{}", (c as u64 + 1) * 1_000_000 + i),
                        chromosome,
                        i * 400 + 1,
                        call,
                    )
                })
            })
            .collect();
        Genome::from_genotypes(&rows).unwrap()
    };
    let (old, new) = (genome("AA"), genome("GG"));
    store.replace_genome(user, &old, "old", 1).await.unwrap();
    let sample = strings(&["rs1000000", "rs1012345", "rs2000001", "rs2024999"]);
    let done = AtomicBool::new(false);
    let reads = AtomicUsize::new(0);
    let writer = async {
        store.replace_genome(user, &new, "new", 2).await.unwrap();
        done.store(true, Ordering::SeqCst);
    };
    let reader = async {
        loop {
            let finished = done.load(Ordering::SeqCst);
            let hits = store.genotypes_by_rsid(user, &sample).await.unwrap();
            assert_eq!(hits.len(), sample.len(), "never nothing");
            assert!(
                hits.iter().all(|g| g.genotype == hits[0].genotype),
                "never a mix: {hits:?}"
            );
            let range = store
                .genotypes_in_range(user, "2", 0, u64::MAX)
                .await
                .unwrap();
            assert_eq!(range.len() as u64, PER_CHROMOSOME, "complete");
            assert!(range.iter().all(|g| g.genotype == range[0].genotype));
            reads.fetch_add(1, Ordering::SeqCst);
            if finished {
                assert_eq!(hits[0].genotype, "GG", "the new genome after the switch");
                break;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::join!(writer, reader);
    assert!(reads.load(Ordering::SeqCst) >= 1);
    assert_eq!(
        store.genome_summary(user).await.unwrap().unwrap().variants,
        2 * PER_CHROMOSOME
    );
}

pub(super) async fn delete_genome_clears_it_and_its_presence(
    store: &dyn Store,
    user: &str,
    bystander: &str,
) {
    store
        .put_readings(
            user,
            &[reading("Glucose", "2024-01-01T08:00:00", "lab", 90.0)],
        )
        .await
        .unwrap();
    let data = [genotype("rs1", "1", 1, "AA"), genotype("rs2", "1", 5, "CC")];
    put_genome(store, user, &data).await;
    put_genome(store, bystander, &data).await;
    store.delete_genome(user).await.unwrap();
    assert_eq!(store.genome_summary(user).await.unwrap(), None);
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence {
            health: true,
            genotype: false
        },
        "the readings stay"
    );
    assert!(
        store
            .genotypes_by_rsid(user, &strings(&["rs1", "rs2"]))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .genotypes_in_range(user, "1", 0, u64::MAX)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .genotypes_by_rsid(bystander, &strings(&["rs1", "rs2"]))
            .await
            .unwrap()
            .len(),
        2,
        "others keep theirs"
    );
    // Deleting again is harmless; an empty genome deletes too; uploading again works.
    store.delete_genome(user).await.unwrap();
    put_genome(store, user, &data).await;
    store
        .replace_genome(user, &Genome::default(), "empty", 3)
        .await
        .unwrap();
    assert_eq!(store.genome_summary(user).await.unwrap(), None);
    put_genome(store, user, &data[..1]).await;
    assert!(store.data_presence(user).await.unwrap().genotype);
}

/// Two imports racing: the last switch wins and its genome reads back whole; the
/// other is never mixed in.
pub(super) async fn racing_replacements_leave_one_whole_genome(store: &dyn Store, user: &str) {
    let genome = |call: &str, count: u64| {
        let rows: Vec<Genotype> = (0..count)
            .map(|i| genotype(&format!("rs{}", 100 + i), "3", 1_000 + i * 5_000, call))
            .collect();
        Genome::from_genotypes(&rows).unwrap()
    };
    let (a, b) = (genome("AA", 3_000), genome("CC", 2_000));
    let (left, right) = tokio::join!(
        store.replace_genome(user, &a, "a", 1),
        store.replace_genome(user, &b, "b", 2)
    );
    left.unwrap();
    right.unwrap();
    let summary = store.genome_summary(user).await.unwrap().unwrap();
    let range = store
        .genotypes_in_range(user, "3", 0, u64::MAX)
        .await
        .unwrap();
    let (call, count) = if summary.source == "a" {
        ("AA", 3_000)
    } else {
        ("CC", 2_000)
    };
    assert_eq!(summary.variants, count);
    assert_eq!(range.len() as u64, count, "{}", summary.source);
    assert!(range.iter().all(|g| g.genotype == call));
}
