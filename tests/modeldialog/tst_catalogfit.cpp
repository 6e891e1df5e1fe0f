// The catalog's fit estimates against those of files: every entry of the built-in catalog is
// written as a synthetic GGUF of its shape and quantization (mkmodel's tensors and metadata,
// the types llama-quantize gives them; the weights left as a hole, so a 13B file costs no
// disk), and the entry's estimate must equal the file's, part by part. The machine's GPU memory
// and RAM are injected, so the verdicts are known: 2 GiB of GPU memory and 8 GiB of RAM.
#include <QTemporaryDir>
#include <QtTest>

#include "download/catalog.h"
#include "ember/ember.h"
#include "embermodelinspector.h"
#include "gguf/writer.h"
#include "mkmodel_shapes.h"
#include "quant/mix.h"

namespace {

constexpr uint64_t kGiB = 1ull << 30;
const ember::FitLimits kLimits{2 * kGiB, 8 * kGiB};

ember::cli::mkmodel::Shape shapeOf(const CatalogEntry& e, int contextLength) {
    ember::cli::mkmodel::Shape s;
    s.arch = e.architecture.toStdString();
    s.layers = e.shape.nLayer;
    s.embd = e.shape.nEmbd;
    s.heads = e.shape.nHead;
    s.kv_heads = e.shape.nHeadKv;
    s.ffn = e.shape.nFf;
    s.vocab = e.shape.nVocab;
    s.head_dim = e.shape.headDim;
    s.tied = e.shape.tied;
    s.swa = e.shape.slidingWindow;
    s.ctx = uint32_t(e.contextLength > 0 ? e.contextLength : contextLength);
    return s;
}

// The file mkmodel would write for the entry, with every tensor a hole.
QString writeSynthetic(const CatalogEntry& e, int contextLength, const QString& dir) {
    const auto ft = ember::find_file_type(e.quantization.toStdString());
    if (!ft) return {};
    const auto s = shapeOf(e, contextLength);
    ember::gguf::Writer w;
    w.set_string("general.architecture", s.arch);
    w.set_u32("general.file_type", uint32_t(ft->ftype));
    ember::cli::mkmodel::write_hparams(w, s);
    const ember::MixModel mix{s.arch, s.layers, s.heads, s.kv_heads, !s.tied};
    for (const auto& t : ember::cli::mkmodel::tensor_list(s)) {
        auto type = ember::llamacpp_tensor_type(*ft, mix, t.name, t.dims[0], int(t.dims.size()));
        if (!type) return {};
        // Every tensor type of the file must be one the engine runs.
        const auto traits = ember::type_traits(*type);
        if (!traits || !traits->supported) return {};
        w.add_zeros(t.name, *type, t.dims);
    }
    const QString path = dir + "/" + e.filename;
    return w.write(path.toStdString()).ok() ? path : QString();
}

ember::ModelShape engineShape(const CatalogEntry& e) {
    ember::ModelShape s;
    s.arch = e.architecture.toStdString();
    s.n_layer = e.shape.nLayer, s.n_embd = e.shape.nEmbd, s.n_head = e.shape.nHead;
    s.n_head_kv = e.shape.nHeadKv, s.n_ff = e.shape.nFf, s.n_vocab = e.shape.nVocab;
    s.head_dim = e.shape.headDim;
    s.tied = e.shape.tied;
    s.sliding_window = e.shape.slidingWindow;
    s.n_ctx_train = uint32_t(std::max(e.contextLength, 0));
    s.file_type = e.quantization.toStdString();
    return s;
}

// QVERIFY2 builds its message whether or not the check fails.
QString errorOf(const ember::Result<ember::FitEstimate>& r) {
    return r.ok() ? QString() : QString::fromStdString(r.error().message);
}

QList<CatalogEntry> estimatedEntries() {
    QString why;
    auto catalog = Catalog::builtin(&why);
    QList<CatalogEntry> out;
    if (!catalog) return out;
    for (const CatalogEntry& e : catalog->entries())
        if (e.supported && e.shape.isKnown()) out << e;
    return out;
}

}  // namespace

class TestCatalogFit : public QObject {
    Q_OBJECT

private slots:
    void everyEntryEstimatesAsItsFile_data() {
        QTest::addColumn<QString>("device");
        QTest::addColumn<int>("context");
        QTest::newRow("best GPU, 4096 tokens") << QString() << 4096;
        QTest::newRow("GPU 0, 2048 tokens") << QString("0") << 2048;
        QTest::newRow("CPU, 4096 tokens") << QString("cpu") << 4096;
    }
    void everyEntryEstimatesAsItsFile() {
        QFETCH(QString, device);
        QFETCH(int, context);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QList<CatalogEntry> entries = estimatedEntries();
        QVERIFY2(entries.size() >= 10, "the built-in catalog lost its shapes");
        EmberModelInspector inspector(kLimits);
        for (const CatalogEntry& e : entries) {
            const QString path = writeSynthetic(e, context, dir.path());
            QVERIFY2(!path.isEmpty(), qPrintable(e.id + ": no synthetic file"));
            auto fromFile =
                ember::estimate_fit(path.toStdString(), context, device.toStdString(), kLimits);
            QVERIFY2(fromFile.ok(), qPrintable(e.id + ": " + errorOf(fromFile)));
            auto fromEntry =
                ember::estimate_fit(engineShape(e), context, device.toStdString(), kLimits);
            QVERIFY2(fromEntry.ok(), qPrintable(e.id + ": " + errorOf(fromEntry)));
            const QByteArray what = (e.id + " on " + device).toUtf8();
            QVERIFY2(fromEntry->verdict == fromFile->verdict, what.constData());
            QVERIFY2(fromEntry->weights == fromFile->weights, what.constData());
            QVERIFY2(fromEntry->kv_cache == fromFile->kv_cache, what.constData());
            QVERIFY2(fromEntry->scratch == fromFile->scratch, what.constData());
            QVERIFY2(fromEntry->total == fromFile->total, what.constData());
            QVERIFY2(fromEntry->available == fromFile->available, what.constData());
            QCOMPARE(fromEntry->message, fromFile->message);
            // The weights are the real file's: its size less the header (a Llama 3
            // vocabulary with its merges takes 10 MB of it), or on a GPU their device layout
            // (rows padded), within 2%; for an entry without an exact size, within 2% of the
            // size the quantizer's page gives, so a wrong shape is caught either way.
            const double size = double(e.displaySize());
            QVERIFY2(
                double(fromFile->weights) > 0.98 * size && double(fromFile->weights) < 1.02 * size,
                qPrintable(e.id + QString(": weights %1 of a %2-byte file")
                                      .arg(fromFile->weights)
                                      .arg(e.displaySize())));

            // The app's route: the inspector gives both the same verdict and numbers, never
            // an internal error.
            const FitInfo fileFit = inspector.estimateFile(path, context, device);
            const FitInfo entryFit = inspector.estimateEntry(e, context, device);
            QVERIFY2(entryFit.verdict != FitInfo::Verdict::Unknown, qPrintable(entryFit.detail));
            QCOMPARE(entryFit.verdictName(), fileFit.verdictName());
            QCOMPARE(entryFit.needed, fileFit.needed);
            QCOMPARE(entryFit.label(), fileFit.label());
            QFile::remove(path);
        }
    }

    // 2 GiB of GPU memory: no multi-gigabyte model fits it; 8 GiB of RAM: a 13B model at
    // 4096 tokens does not fit in memory either.
    void verdictsFollowTheMachine() {
        const QList<CatalogEntry> entries = estimatedEntries();
        QVERIFY(!entries.isEmpty());
        for (const CatalogEntry& e : entries) {
            auto gpu = ember::estimate_fit(engineShape(e), 4096, "0", kLimits);
            QVERIFY(gpu.ok());
            if (gpu->no_gpu) continue;  // no Vulkan device here: the CPU case below covers it
            if (e.displaySize() > qint64(2 * kGiB))
                QVERIFY2(gpu->verdict != ember::FitEstimate::Verdict::FitsGpu, qPrintable(e.id));
            if (gpu->verdict == ember::FitEstimate::Verdict::FitsGpu)
                QVERIFY2(gpu->total > uint64_t(e.displaySize()), qPrintable(e.id));
            // Partial offload: a 7B model keeps some of its layers on a 2 GiB GPU, and the
            // dialog's badge says how many.
            if (gpu->verdict == ember::FitEstimate::Verdict::DoesNotFit &&
                e.displaySize() > qint64(3 * kGiB) && e.displaySize() < qint64(6 * kGiB)) {
                QVERIFY2(gpu->gpu_layers > 0 && gpu->gpu_layers < gpu->n_layers,
                         qPrintable(e.id + ": " + QString::fromStdString(gpu->message)));
                QVERIFY2(gpu->split_gpu_bytes <= 2 * kGiB, qPrintable(e.id));
                const FitInfo f = EmberModelInspector(kLimits).estimateEntry(e, 4096, "0");
                QCOMPARE(f.label(), QString("partly fits: %1 of %2 layers on the GPU")
                                        .arg(gpu->gpu_layers)
                                        .arg(gpu->n_layers));
            }
        }
        int tooLarge = 0;
        for (const CatalogEntry& e : entries) {
            auto cpu = ember::estimate_fit(engineShape(e), 4096, "cpu", kLimits);
            QVERIFY(cpu.ok());
            QCOMPARE(cpu->available, 8 * kGiB);
            const auto expected = cpu->total > cpu->available
                                      ? ember::FitEstimate::Verdict::NoMemory
                                      : ember::FitEstimate::Verdict::CpuOnly;
            QVERIFY2(cpu->verdict == expected, qPrintable(e.id));
            // 13B and larger (7 GB of weights and more) cannot run; up to 3B (2 GB) can.
            if (e.displaySize() > qint64(7e9))
                QVERIFY2(cpu->verdict == ember::FitEstimate::Verdict::NoMemory, qPrintable(e.id));
            if (e.displaySize() < qint64(2.5e9))
                QVERIFY2(cpu->verdict == ember::FitEstimate::Verdict::CpuOnly,
                         qPrintable(e.id + ": " + QString::fromStdString(cpu->message)));
            tooLarge += cpu->verdict == ember::FitEstimate::Verdict::NoMemory;
        }
        QVERIFY(tooLarge >= 4);  // the four 13B models at least
        // The app's words for it.
        EmberModelInspector inspector(kLimits);
        for (const CatalogEntry& e : entries) {
            if (e.displaySize() < qint64(7e9)) continue;
            const FitInfo f = inspector.estimateEntry(e, 4096, "cpu");
            QCOMPARE(f.verdictName(), QString("nomem"));
            QVERIFY2(f.label().startsWith("does not fit in memory: needs "), qPrintable(f.label()));
            QVERIFY2(f.label().endsWith(", 8.0 GiB free"), qPrintable(f.label()));
        }
    }

    // The app's "leave N GiB for other programs" comes off the GPU as the engine's
    // gpu_mem_reserve does for a load: models that fit 2 GiB do not fit what is left of it.
    void gpuReserveComesOffTheGpu() {
        EmberModelInspector inspector(kLimits);
        int checked = 0;
        for (const CatalogEntry& e : estimatedEntries()) {
            inspector.setGpuReserve(0);
            const FitInfo whole = inspector.estimateEntry(e, 4096, "0");
            if (whole.noGpu) QSKIP("no Vulkan device here");
            if (whole.verdict != FitInfo::Verdict::FitsGpu || whole.needed < qint64(kGiB / 2))
                continue;
            inspector.setGpuReserve(kGiB * 7 / 4);  // a quarter of a GiB left
            const FitInfo less = inspector.estimateEntry(e, 4096, "0");
            QVERIFY2(less.verdict == FitInfo::Verdict::DoesNotFit, qPrintable(e.id + less.label()));
            QVERIFY2(less.available < whole.available, qPrintable(e.id));
            ember::FitLimits reserved = kLimits;
            reserved.gpu_mem_reserve = kGiB * 7 / 4;
            auto engine = ember::estimate_fit(engineShape(e), 4096, "0", reserved);
            QVERIFY(engine.ok());
            QCOMPARE(less.detail, QString::fromStdString(engine->message));
            checked++;
        }
        QVERIFY(checked > 0);
    }

    // A file type no file has is an error, not a verdict.
    void unknownQuantizationIsNoEstimate() {
        QList<CatalogEntry> entries = estimatedEntries();
        QVERIFY(!entries.isEmpty());
        CatalogEntry e = entries.front();
        e.quantization = "Q3_XYZ";
        EmberModelInspector inspector(kLimits);
        const FitInfo f = inspector.estimateEntry(e, 2048, "cpu");
        QCOMPARE(f.verdict, FitInfo::Verdict::Unknown);
        QCOMPARE(f.verdictName(), QString());
        QCOMPARE(f.label(), QString("no estimate"));
        QVERIFY2(f.detail.contains("Q3_XYZ"), qPrintable(f.detail));
    }
};

QTEST_GUILESS_MAIN(TestCatalogFit)
#include "tst_catalogfit.moc"
