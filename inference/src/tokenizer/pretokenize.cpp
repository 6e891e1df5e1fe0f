#include "tokenizer/pretokenize.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "common/log.h"
#include "tokenizer/unicode.h"

namespace ember::tok {
namespace {

// The regexes are data: the pre-tokenizer patterns of each model family's tokenizer.json,
// in the form llama.cpp uses (case-insensitive contractions spelled out as [sS] etc.).
#define EMBER_GPT2_RE R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))"
#define EMBER_CONTRACTIONS_RE R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))"
#define EMBER_HAN_HANGUL_RE R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)"
#define EMBER_LLAMA3_RE                                                                       \
    EMBER_CONTRACTIONS_RE R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*)" \
                          R"(|\s*[\r\n]+|\s+(?!\S)|\s+)"
#define EMBER_QWEN2_RE                                                                   \
    EMBER_CONTRACTIONS_RE R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*)" \
                          R"(|\s*[\r\n]+|\s+(?!\S)|\s+)"
#define EMBER_PORO_RE R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{0964}\x{06D4}\x{060C})]+)"

struct NamedSpec {
    std::vector<const char*> names;
    PreTokenizerSpec spec;
};

// Built on first use, so that it is ready whenever a tokenizer is created.
const std::vector<NamedSpec>& registry() {
    const PreTokenizerSpec kGpt2{{EMBER_GPT2_RE}};
    // llama.cpp's fallback list for "default" (and a missing tokenizer.ggml.pre).
    const PreTokenizerSpec kDefault{{
        R"([\p{P}\$\+<=>\^~\|]+)",
        EMBER_GPT2_RE,
        R"(\p{N}+)",
        R"([0-9][0-9][0-9])",
    }};
    const PreTokenizerSpec kLlama3{{EMBER_LLAMA3_RE}, true, true};
    const PreTokenizerSpec kLlama3Regex{{EMBER_LLAMA3_RE}};
    const PreTokenizerSpec kQwen2Regex{{EMBER_QWEN2_RE}};
    // Qwen's tokenizer.json (Qwen 2, 2.5, 3 and the DeepSeek-R1 distills of Qwen, which
    // llama.cpp names "deepseek-r1-qwen") has an NFC normalizer, and Hugging Face's ids are the
    // reference; llama.cpp skips it, so the two differ on text that is not NFC (e.g. "e" +
    // U+0301 from a macOS file name). Only the GGUF's pre name says it is Qwen's tokenizer:
    // others sharing the regex (stablelm2, hunyuan) do not normalize.
    PreTokenizerSpec kQwen2 = kQwen2Regex;
    kQwen2.nfc = true;
    const PreTokenizerSpec kDeepseekLlm{{
        "[\\r\\n]",
        // Cased letters (Lu, Ll, Lt) of DeepSeek's tokenizer.json, as code point ranges.
        R"(\s?[\x{41}-\x{5A}\x{61}-\x{7A}\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA})"
        R"(\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377})"
        R"(\x{37B}-\x{37D}\x{37F}\x{386})"
        R"(\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F})"
        R"(\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA})"
        R"(\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15})"
        R"(\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B})"
        R"(\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4})"
        R"(\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4})"
        R"(\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124})"
        R"(\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F})"
        R"(\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})"
        R"(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F})"
        R"(\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17})"
        R"(\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3})"
        R"(\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF})"
        R"(\x{1E900}-\x{1E943}]+)",
        R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)",
        R"(\s+$)",
        EMBER_HAN_HANGUL_RE,
        R"(\p{N}+)",
    }};
    const PreTokenizerSpec kDeepseekCoder{{
        "[\\r\\n]",
        R"(\s?\p{L}+)",
        R"(\s?\p{P}+)",
        EMBER_HAN_HANGUL_RE,
        R"(\p{N})",
    }};
    const PreTokenizerSpec kDeepseekV3{{
        R"(\p{N}{1,3})",
        R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)",
        R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+)"
        R"(| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
    }};
    const PreTokenizerSpec kFalcon{{
        R"([\p{P}\$\+<=>\^~\|`]+)",
        EMBER_GPT2_RE,
        R"([0-9][0-9][0-9])",
    }};
    const PreTokenizerSpec kStarcoder{{R"(\p{N})", EMBER_GPT2_RE}};
    const PreTokenizerSpec kPoro{{EMBER_PORO_RE}};
    const PreTokenizerSpec kViking{{EMBER_PORO_RE, R"(\p{N})"}};
    // PCRE2 runs the original tokenizer.json pattern (with \p{Lu} etc.) directly.
    const PreTokenizerSpec kTekken{
        {R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
         R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
         R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
        true,
        true};

    static const std::vector<NamedSpec> table = {
        {{"default"}, kDefault},
        {{"gpt-2", "gpt2", "gpt-neox", "phi-2", "mpt", "olmo", "jais", "jina-es", "jina-de",
          "jina-v2-es", "jina-v2-de", "jina-v2-code", "roberta-bpe", "gigachat", "trillion"},
         kGpt2},
        {{"llama-bpe", "llama3", "llama-v3", "falcon3"}, kLlama3},
        {{"dbrx", "smaug-bpe", "chatglm-bpe"}, kLlama3Regex},
        {{"qwen2", "qwen2.5", "deepseek-r1-qwen"}, kQwen2},
        {{"stablelm2", "hunyuan"}, kQwen2Regex},
        {{"deepseek-llm"}, kDeepseekLlm},
        {{"deepseek-coder"}, kDeepseekCoder},
        {{"deepseek-v3"}, kDeepseekV3},
        {{"falcon"}, kFalcon},
        {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
         kStarcoder},
        {{"poro-chat", "bloom", "gpt3-finnish"}, kPoro},
        {{"viking"}, kViking},
        {{"tekken"}, kTekken},
    };
    return table;
}

}  // namespace

const PreTokenizerSpec* find_pre_tokenizer(std::string_view name) {
    for (const auto& n : registry()) {
        for (const char* s : n.names) {
            if (name == s) return &n.spec;
        }
    }
    return nullptr;
}

std::vector<std::string> pre_tokenizer_names() {
    std::vector<std::string> out;
    for (const auto& n : registry()) out.insert(out.end(), n.names.begin(), n.names.end());
    return out;
}

struct PreTokenizer::Regex {
    pcre2_code* code = nullptr;
    ~Regex() {
        if (code) pcre2_code_free(code);
    }
};

PreTokenizer::~PreTokenizer() = default;

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::create(std::string_view name) {
    std::unique_ptr<PreTokenizer> p(new PreTokenizer());
    p->m_name = std::string(name.empty() ? "default" : name);
    p->m_spec = find_pre_tokenizer(p->m_name);
    if (!p->m_spec) {
        EMBER_LOG_WARN("tokenizer.ggml.pre '%s' is not a known pre-tokenizer; using gpt-2's",
                       p->m_name.c_str());
        p->m_spec = find_pre_tokenizer("gpt-2");
    }
    for (const char* pattern : p->m_spec->regexes) {
        int err = 0;
        PCRE2_SIZE err_off = 0;
        auto re = std::make_unique<Regex>();
        re->code =
            pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &err_off, nullptr);
        if (!re->code) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(err, msg, sizeof msg);
            return make_error("tokenizer.regex", "pre-tokenizer '" + p->m_name +
                                                     "': regex does not compile at " +
                                                     std::to_string(err_off) + ": " +
                                                     reinterpret_cast<const char*>(msg));
        }
        // JIT is an optimisation only; without it the interpreter runs.
        pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE);
        p->m_regexes.push_back(std::move(re));
    }
    return p;
}

std::vector<std::pair<size_t, size_t>> PreTokenizer::split(std::string_view text) const {
    struct Piece {
        size_t begin, end;
        bool fixed;  // an invalid UTF-8 byte: never matched against a regex
    };
    std::vector<Piece> pieces;
    {
        size_t run = 0, i = 0;
        while (i < text.size()) {
            const Utf8Check c = utf8_check(text, i);
            if (c.status == Utf8Status::Valid) {
                i += c.len;
                continue;
            }
            if (run < i) pieces.push_back({run, i, false});
            pieces.push_back({i, i + 1, true});
            run = ++i;
        }
        if (run < text.size()) pieces.push_back({run, text.size(), false});
    }

    pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
    std::vector<Piece> next;
    for (const auto& re : m_regexes) {
        next.clear();
        for (const Piece& p : pieces) {
            if (p.fixed) {
                next.push_back(p);
                continue;
            }
            const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + p.begin);
            const size_t len = p.end - p.begin;
            size_t pos = 0, gap = 0;  // relative to p.begin
            while (pos < len) {
                int rc = pcre2_match(re->code, subject, len, pos, PCRE2_NO_UTF_CHECK, md, nullptr);
                if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
                    rc = pcre2_match(re->code, subject, len, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                                     md, nullptr);
                }
                if (rc < 0) break;  // no match (or a resource limit): the rest is a gap
                const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
                const size_t ms = ov[0], me = ov[1];
                if (me <= ms) {  // an empty match consumes nothing; step over one character
                    if (ms >= len) break;
                    pos = ms + utf8_char_len(text, p.begin + ms);
                    continue;
                }
                if (ms > gap) next.push_back({p.begin + gap, p.begin + ms, false});
                next.push_back({p.begin + ms, p.begin + me, false});
                gap = pos = me;
            }
            if (gap < len) next.push_back({p.begin + gap, p.end, false});
        }
        pieces.swap(next);
    }
    pcre2_match_data_free(md);

    std::vector<std::pair<size_t, size_t>> out;
    out.reserve(pieces.size());
    for (const Piece& p : pieces) out.emplace_back(p.begin, p.end);
    return out;
}

}  // namespace ember::tok
