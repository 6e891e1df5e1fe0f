import QtQuick
import QtQuick.Dialogs

// Saves the open conversation as Markdown or JSON: a Save dialog that opens in the folder of
// the suggested file (the documents folder if there is one, else home) with that name filled
// in. `chat` needs: suggestedExportFile(format), exportConversation(file, format).
FileDialog {
    id: root
    property var chat
    property string format: "markdown"

    function ask(f) {
        format = f
        const file = String(chat.suggestedExportFile(f))
        currentFolder = file.substring(0, file.lastIndexOf("/"))
        selectedFile = file
        open()
    }

    title: format === "json" ? qsTr("Export conversation as JSON") : qsTr("Export conversation as Markdown")
    fileMode: FileDialog.SaveFile
    acceptLabel: qsTr("Save")
    defaultSuffix: format === "json" ? "json" : "md"
    nameFilters: format === "json" ? [qsTr("JSON (*.json)")] : [qsTr("Markdown (*.md)")]
    onAccepted: chat.exportConversation(selectedFile, format)
}
