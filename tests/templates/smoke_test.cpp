#include <gtest/gtest.h>
#include "templates/chat_template.h"
using namespace ember;
TEST(Smoke, ChatML) {
    ChatTemplateInputs in;
    in.messages = {{"user", "hi"}};
    auto r = render_chat_template(chatml_template(), in);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(*r, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}
