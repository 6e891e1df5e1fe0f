import QtQuick
import QtQuick.Dialogs
import QtTest
import Ember

// The export dialog is a Save dialog that opens in the suggested file's folder, and saves through
// the real ChatController.
Item {
    id: root
    width: 800
    height: 600

    readonly property ChatController chat: fixture.chat(fixture.inference(), fixture.settings())

    ExportDialog {
        id: dialog
        chat: root.chat
    }

    TestCase {
        name: "ExportDialog"
        when: windowShown

        function test_saveDialogInTheSuggestedFolder() {
            const suggested = String(root.chat.suggestedExportFile("markdown"))
            verify(suggested.startsWith("file:///") && suggested.endsWith("/conversation.md"),
                   suggested)
            dialog.ask("markdown")
            compare(dialog.fileMode, FileDialog.SaveFile)
            compare(dialog.acceptLabel, "Save")
            compare(String(dialog.currentFolder), suggested.substring(0, suggested.lastIndexOf("/")))
            compare(String(dialog.selectedFile), suggested)
            compare(dialog.nameFilters[0], "Markdown (*.md)")
            dialog.close()
            dialog.ask("json")
            compare(dialog.defaultSuffix, "json")
            compare(String(dialog.selectedFile), String(root.chat.suggestedExportFile("json")))
            verify(String(dialog.selectedFile).endsWith("/conversation.json"))
            // Accepted, it asks the chat to export (which has nothing yet, and says so).
            dialog.accepted()
            compare(root.chat.errorMessage, "Nothing to export yet.")
            root.chat.dismissError()
            dialog.close()
        }
    }
}
