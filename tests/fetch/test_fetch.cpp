// fetch/: the rules every download follows, and the Qt-free downloader of ember-cli pull
// against a cpp-httplib server in this process (Range resume, the sha256 on a redirect,
// checksum and HTTP failures leaving nothing behind).
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "fetch.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace ember::fetch;

namespace {

std::string bytes(size_t n) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; i++) s[i] = char((i * 131 + i / 7) & 0xff);
    return s;
}

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void write(const fs::path& p, const std::string& s) {
    std::ofstream(p, std::ios::binary) << s;
}

// /file: the data, with Range; /hf/file: 302 to /file with X-Linked-Etag (the data's sha256, or
// `linked` when set); anything else 404. Records each GET's Range header.
class Server {
public:
    explicit Server(std::string data) : m_data(std::move(data)) {
        m_server.Get("/file", [this](const httplib::Request& req, httplib::Response& res) {
            {
                std::lock_guard<std::mutex> lock(m_mutex);
                m_ranges.push_back(req.get_header_value("Range"));
            }
            res.set_header("ETag", "\"v1\"");
            res.set_content(m_data, "application/octet-stream");
        });
        m_server.Get("/hf/file", [this](const httplib::Request&, httplib::Response& res) {
            res.status = 302;
            res.set_header("Location", "/file");
            res.set_header("X-Linked-Etag", "\"" + (m_linked.empty() ? m_sha256 : m_linked) + "\"");
            res.set_header("X-Linked-Size", std::to_string(m_data.size()));
        });
        m_port = m_server.bind_to_any_port("127.0.0.1");
        m_thread = std::thread([this] { m_server.listen_after_bind(); });
    }
    ~Server() {
        m_server.stop();
        m_thread.join();
    }
    std::string url(const std::string& path) const {
        return "http://127.0.0.1:" + std::to_string(m_port) + path;
    }
    void set_sha256(std::string hex) { m_sha256 = std::move(hex); }
    void set_linked(std::string hex) { m_linked = std::move(hex); }
    std::vector<std::string> ranges() {
        std::lock_guard<std::mutex> lock(m_mutex);
        return m_ranges;
    }

private:
    httplib::Server m_server;
    std::string m_data, m_sha256, m_linked;
    int m_port = 0;
    std::thread m_thread;
    std::mutex m_mutex;
    std::vector<std::string> m_ranges;
};

struct FetchTest : ::testing::Test {
    fs::path dir;
    std::string data = bytes(300 * 1000);
    std::string sha256;
    void SetUp() override {
        dir = ember::test::temp_dir() /
              ::testing::UnitTest::GetInstance()->current_test_info()->name();
        fs::remove_all(dir);
        fs::create_directories(dir);
        write(dir / "data", data);
        sha256 = *file_digest((dir / "data").string(), Checksum::Algorithm::Sha256);
        fs::remove(dir / "data");
    }
    void TearDown() override { fs::remove_all(dir); }
    Request request(const std::string& url) {
        Request r;
        r.url = url;
        r.destination = (dir / "model.gguf").string();
        r.max_retries = 0;
        r.retry_base_delay_ms = 10;
        r.free_space_margin = 0;
        return r;
    }
    std::vector<std::string> files() {
        std::vector<std::string> out;
        for (const auto& e : fs::directory_iterator(dir))
            out.push_back(e.path().filename().string());
        std::sort(out.begin(), out.end());
        return out;
    }
};

}  // namespace

TEST(FetchRules, ContentRange) {
    auto r = parse_content_range("bytes 100-199/1000");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->first, 100);
    EXPECT_EQ(r->last, 199);
    EXPECT_EQ(r->total, 1000);
    r = parse_content_range(" bytes 0-9/* ");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->total, -1);
    r = parse_content_range("bytes */1000");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->first, -1);
    EXPECT_EQ(r->total, 1000);
    for (const char* bad :
         {"", "bytes", "bytes 5-1/10", "items 0-1/2", "bytes -1-2/3", "bytes */*"})
        EXPECT_FALSE(parse_content_range(bad)) << bad;
}

TEST(FetchRules, ChecksumsAndNames) {
    const std::string hex(64, 'A');
    EXPECT_EQ(sha256_from_etag("W/\"" + hex + "\""), std::string(64, 'a'));
    EXPECT_EQ(sha256_from_etag("\"abc\""), "");
    EXPECT_TRUE(parse_checksum("SHA256", hex).ok());
    EXPECT_FALSE(parse_checksum("sha256", "xyz").ok());
    EXPECT_FALSE(parse_checksum("crc32", "00").ok());
    EXPECT_EQ(parse_checksum("md5", std::string(32, 'F'))->hex, std::string(32, 'f'));
    EXPECT_EQ(file_name_from_url("https://h/a/b/model%20x.gguf?download=1"), "model x.gguf");
    EXPECT_EQ(file_name_from_url("https://h/a/"), "");
    EXPECT_EQ(file_name_from_url("https://h/.."), "");
    EXPECT_EQ(file_name_from_url("https://h/a%2Fb"), "");
    EXPECT_EQ(part_path("/m/x.gguf"), "/m/x.gguf.part");
    EXPECT_EQ(state_path("/m/x.gguf"), "/m/x.gguf.part.json");
}

TEST(FetchRules, ResumeOnlyTheSameFile) {
    State s;
    s.url = "https://h/x.gguf";
    s.expected_size = 100;
    s.checksum_algorithm = "sha256";
    s.checksum = std::string(64, 'a');
    const Checksum same = *parse_checksum("sha256", std::string(64, 'a'));
    const Checksum other = *parse_checksum("sha256", std::string(64, 'b'));
    EXPECT_TRUE(resumable(s, s.url, same, 100, 50));
    EXPECT_TRUE(resumable(s, s.url, {}, -1, 50));
    EXPECT_FALSE(resumable(s, "https://h/y.gguf", same, 100, 50));
    EXPECT_FALSE(resumable(s, s.url, other, 100, 50));
    EXPECT_FALSE(resumable(s, s.url, same, 99, 50));
    EXPECT_FALSE(resumable(s, s.url, same, -1, 101));  // longer than the file
    const auto back = state_from_json(state_to_json(s));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->url, s.url);
    EXPECT_EQ(back->checksum, s.checksum);
    EXPECT_EQ(back->expected_size, 100);
    EXPECT_FALSE(state_from_json("{\"version\": 2, \"url\": \"https://h/x\"}"));
}

TEST_F(FetchTest, DownloadsAndVerifies) {
    Server server(data);
    Request r = request(server.url("/file"));
    r.checksum = *parse_checksum("sha256", sha256);
    const Outcome out = download(r);
    ASSERT_TRUE(out.ok()) << out.message;
    EXPECT_TRUE(out.verified);
    EXPECT_EQ(read(r.destination), data);
    EXPECT_EQ(files(), std::vector<std::string>{"model.gguf"});
    EXPECT_EQ(out.checks, "size 300000 bytes as the server announced, sha256 checksum");
}

TEST_F(FetchTest, ResumesTheEarlierPartWithARange) {
    Server server(data);
    Request r = request(server.url("/file"));
    write(part_path(r.destination), data.substr(0, 120000));
    State s;
    s.url = r.url;
    ASSERT_TRUE(save_state(state_path(r.destination), s).ok());
    const Outcome out = download(r);
    ASSERT_TRUE(out.ok()) << out.message;
    EXPECT_EQ(read(r.destination), data);
    ASSERT_FALSE(server.ranges().empty());
    EXPECT_EQ(server.ranges().back(), "bytes=120000-");
}

TEST_F(FetchTest, APartOfAnotherUrlIsNotResumed) {
    Server server(data);
    Request r = request(server.url("/file"));
    write(part_path(r.destination), std::string(120000, 'x'));
    State s;
    s.url = server.url("/other");
    ASSERT_TRUE(save_state(state_path(r.destination), s).ok());
    const Outcome out = download(r);
    ASSERT_TRUE(out.ok()) << out.message;
    EXPECT_EQ(read(r.destination), data);
    EXPECT_EQ(server.ranges().back(), "");
}

TEST_F(FetchTest, TakesTheSha256OnTheRedirect) {
    Server server(data);
    server.set_sha256(sha256);
    const Outcome out = download(request(server.url("/hf/file")));
    ASSERT_TRUE(out.ok()) << out.message;
    EXPECT_TRUE(out.verified);
    EXPECT_EQ(out.checksum.hex, sha256);
    EXPECT_NE(out.checks.find("sha256 checksum reported by the server"), std::string::npos);
}

TEST_F(FetchTest, AWrongSha256LeavesNothing) {
    Server server(data);
    server.set_linked(std::string(64, '1'));
    const Outcome out = download(request(server.url("/hf/file")));
    EXPECT_EQ(out.failure, Failure::ChecksumMismatch);
    EXPECT_NE(out.message.find("checksum mismatch"), std::string::npos) << out.message;
    EXPECT_TRUE(files().empty());
}

TEST_F(FetchTest, NotFoundLeavesNothing) {
    Server server(data);
    const Outcome out = download(request(server.url("/missing.gguf")));
    EXPECT_EQ(out.failure, Failure::Http);
    EXPECT_NE(out.message.find("HTTP 404"), std::string::npos) << out.message;
    EXPECT_TRUE(files().empty());
}

TEST_F(FetchTest, TheContentCheckRefusesTheFile) {
    Server server(data);
    Request r = request(server.url("/file"));
    r.content_check_name = "GGUF header";
    r.content_check = [](const std::string&) { return std::string("not a GGUF file"); };
    const Outcome out = download(r);
    EXPECT_EQ(out.failure, Failure::InvalidFile);
    EXPECT_NE(out.message.find("failed the GGUF header check"), std::string::npos);
    EXPECT_TRUE(files().empty());
}
