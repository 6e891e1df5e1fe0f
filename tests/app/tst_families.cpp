// The app chats with each model family Ember runs: a small synthetic file of each (ember-cli
// mkmodel with the family's preset shrunk, a real tokenizer and the family's chat template)
// loads in the worker over the real engine and answers a user message that the file's own
// template rendered.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "ember/ember.h"
#include "emberchatengine.h"
#include "inferencecontroller.h"

namespace {

QString sharedPath(const QString& rel) {
    const QByteArray env = qgetenv("EMBER_SHARED_DIR");
    return (env.isEmpty() ? QString(EMBER_SHARED_DIR) : QString::fromLocal8Bit(env)) + "/" + rel;
}

// The families' templates as their tokenizer_config.json gives them (Gemma 2's and 3's, and
// Phi-3.5's; the Qwen and Llama vocabularies carry their own).
const char* kGemmaTemplate =
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not "
    "supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != "
    "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') "
    "%}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ "
    "'<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% "
    "endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}";
const char* kPhi3Template =
    "{% for message in messages %}{% if message['role'] == 'system' and message['content'] "
    "%}{{'<|system|>\\n' + message['content'] + '<|end|>\\n'}}{% elif message['role'] == 'user' "
    "%}{{'<|user|>\\n' + message['content'] + '<|end|>\\n'}}{% elif message['role'] == "
    "'assistant' %}{{'<|assistant|>\\n' + message['content'] + '<|end|>\\n'}}{% endif %}{% "
    "endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% "
    "endif %}";

struct Family {
    const char* preset;
    const char* vocab;         // shared/vocab file whose tokenizer (and template) the file takes
    const char* chatTemplate;  // nullptr: the vocabulary's own
    QStringList shape;         // overrides of the preset's numbers
    const char* marker;        // what the family's template writes before the reply
};

const QStringList kSmall = {"--embd", "64",    "--heads", "2",        "--kv-heads",
                            "1",      "--ffn", "128",     "--layers", "2"};

QList<Family> families() {
    return {
        {"qwen2.5-7b", "ggml-vocab-qwen3.gguf", nullptr, kSmall, "<|im_start|>assistant\n"},
        {"qwen3-8b", "ggml-vocab-qwen3.gguf", nullptr, kSmall + QStringList{"--head-dim", "32"},
         "<|im_start|>assistant\n"},
        {"llama3.1-8b", "ggml-vocab-llama3.gguf", nullptr, kSmall,
         "<|start_header_id|>assistant<|end_header_id|>\n\n"},
        {"gemma2-9b", "ggml-vocab-llama-spm.gguf", kGemmaTemplate,
         kSmall + QStringList{"--head-dim", "32"}, "<start_of_turn>model\n"},
        {"gemma3-4b", "ggml-vocab-llama-spm.gguf", kGemmaTemplate,
         kSmall + QStringList{"--head-dim", "32"}, "<start_of_turn>model\n"},
        {"phi3.5-mini", "ggml-vocab-llama-spm.gguf", kPhi3Template, kSmall, "<|assistant|>\n"},
    };
}

}  // namespace

class TestFamilies : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    // The synthetic file of `f`, or an empty string (with a failure logged).
    QString make(const Family& f) {
        const QString out = m_dir.filePath(QString(f.preset) + ".gguf");
        QStringList args = {"mkmodel",
                            "-o",
                            out,
                            "--preset",
                            f.preset,
                            "--type",
                            "q8_0",
                            "--vocab-from",
                            sharedPath(QString("vocab/") + f.vocab),
                            "--threads",
                            "1"};
        args += f.shape;
        if (f.chatTemplate) {
            const QString t = m_dir.filePath(QString(f.preset) + ".jinja");
            QFile file(t);
            if (!file.open(QIODevice::WriteOnly)) return {};
            file.write(f.chatTemplate);
            file.close();
            args += {"--chat-template", t};
        }
        QProcess p;
        p.start(EMBER_CLI_PATH, args);
        if (!p.waitForFinished(300000) || p.exitCode() != 0) {
            qWarning() << "mkmodel failed:" << p.readAllStandardError();
            return {};
        }
        return out;
    }

private slots:
    void chatsWithEachFamily_data() {
        QTest::addColumn<int>("index");
        const auto all = families();
        for (int i = 0; i < all.size(); i++) QTest::newRow(all[i].preset) << i;
    }

    void chatsWithEachFamily() {
        QFETCH(int, index);
        const Family f = families().at(index);
        QVERIFY(m_dir.isValid());
        const QString path = make(f);
        QVERIFY2(!path.isEmpty(), f.preset);

        // What the file's template makes of the conversation, through the engine's own API.
        const QList<ChatTurn> chat{{"user", "Hello! Who are you?"}};
        ember::LoadParams lp;
        lp.backend = ember::BackendKind::Cpu;
        lp.n_threads = 1;
        lp.n_ctx = 256;
        auto direct = ember::Model::load(path.toStdString(), lp);
        QVERIFY2(direct.ok(), direct.ok() ? "" : direct.error().message.c_str());
        bool fallback = true;
        const std::vector<ember::ChatMessage> msgs{{"user", "Hello! Who are you?"}};
        auto rendered = (*direct)->apply_chat_template(msgs, true, &fallback);
        QVERIFY2(rendered.ok(), rendered.ok() ? "" : rendered.error().message.c_str());
        QVERIFY(!fallback);
        QVERIFY2(QString::fromStdString(*rendered).endsWith(f.marker), rendered->c_str());
        std::vector<int32_t> tokens = (*direct)->tokenize(*rendered, true, true);
        // As the app does: a template that writes the BOS itself does not get a second one.
        if (tokens.size() >= 2 && tokens[0] == (*direct)->bos() && tokens[1] == (*direct)->bos())
            tokens.erase(tokens.begin());
        const int promptTokens = int(tokens.size());
        direct->reset();

        // The app: load through the worker, send the message, get a streamed reply.
        InferenceController c([] { return std::make_unique<EmberChatEngine>(); });
        EngineLoadOptions o;
        o.path = path.toStdString();
        o.device = "cpu";
        o.contextLength = 256;
        QSignalSpy changed(&c, &InferenceController::modelChanged);
        c.loadModel(o);
        QVERIFY(changed.wait(60000));
        QVERIFY2(c.modelLoaded(), f.preset);

        QSignalSpy finished(&c, &InferenceController::generationFinished);
        QSignalSpy failed(&c, &InferenceController::generationFailed);
        QSignalSpy batches(&c, &InferenceController::textReady);
        EngineSampling s;
        s.temperature = 0;
        s.maxTokens = 12;
        QVERIFY(c.generate(chat, s) != 0);
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty() || !failed.isEmpty(), 120000);
        QVERIFY2(failed.isEmpty(),
                 failed.isEmpty() ? "" : qPrintable(failed.at(0).at(0).toString()));
        const QString reply = finished.at(0).at(0).toString();
        const auto stats = finished.at(0).at(1).value<GenerationStats>();
        QVERIFY2(!stats.templateFallback, f.preset);
        QCOMPARE(stats.promptTokens, promptTokens);
        QVERIFY(stats.generatedTokens > 0);
        QVERIFY2(!reply.isEmpty(), f.preset);
        QString streamed;
        for (const auto& b : batches) streamed += b.at(0).toString();
        QCOMPARE(streamed, reply);
    }
};

QTEST_GUILESS_MAIN(TestFamilies)
#include "tst_families.moc"
